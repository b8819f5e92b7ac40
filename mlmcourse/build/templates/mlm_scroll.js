/* A code block or output wider (or taller) than its box scrolls; a keyboard user must be able to
   scroll it too, so each one that scrolls takes the focus (Tab) and is a region named after its
   cell ("Code of cell 12", "Output of cell 12", "Equation in cell 12": the number of the cell's
   In [12] prompt, or its place on the page for a text cell). The
   build takes nbconvert's nameless tabindex off every cell and output, so only what scrolls is
   a Tab stop. A folded solution is measured again when it opens. */
(function () {
  var SELECTOR = "main .jp-InputArea-editor, main .jp-OutputArea-output pre, " +
                 "main .jp-OutputArea-output, main mjx-container[display=true], main.mlm-doc pre, " +
                 "main table";
  var cells = [].slice.call(document.querySelectorAll("main .jp-Cell"));

  function cellNumber(block) {
    var cell = block.closest(".jp-Cell");
    if (!cell) {  // a guide's code block or table: its place among the page's own
      var same = document.querySelectorAll("main " + block.tagName.toLowerCase());
      return String([].indexOf.call(same, block) + 1);
    }
    var prompt = cell.querySelector(".jp-InputPrompt");
    var shown = prompt && /\[(\d+)\]/.exec(prompt.textContent);
    return shown ? shown[1] : String(cells.indexOf(cell) + 1);
  }

  function scrolls(block) {
    var style = window.getComputedStyle(block);
    return (/auto|scroll/.test(style.overflowX) && block.scrollWidth > block.clientWidth + 1) ||
      (/auto|scroll/.test(style.overflowY) && block.scrollHeight > block.clientHeight + 1);
  }

  function mark() {
    document.querySelectorAll(SELECTOR).forEach(function (block) {
      if (block.hasAttribute("tabindex") || !scrolls(block)) { return; }
      if (block.parentElement.closest("[data-mlm-scrolls]")) { return; }  // its box scrolls
      var kind = block.classList.contains("jp-InputArea-editor") ? "Code" :
        block.tagName.toLowerCase() === "table" ? "Table" :
        !block.closest(".jp-Cell") ? "Code block" :
        block.tagName.toLowerCase() === "mjx-container" ? "Equation" : "Output";
      block.setAttribute("tabindex", "0");
      if (block.tagName.toLowerCase() !== "table") { block.setAttribute("role", "region"); }
      block.setAttribute("data-mlm-scrolls", "");
      var alone = kind === "Code block" || (kind === "Table" && !block.closest(".jp-Cell"));
      block.setAttribute("aria-label", alone ? kind + " " + cellNumber(block) :
                         kind + (kind === "Equation" ? " in" : " of") + " cell " +
                         cellNumber(block));
    });
  }
  mark();
  window.addEventListener("resize", mark);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(mark);  // equations have their width once typeset
  }
  document.querySelectorAll("main details").forEach(function (details) {
    details.addEventListener("toggle", mark);
  });
})();
