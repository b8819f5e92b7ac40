/* A code block or output wider (or taller) than its box scrolls; a keyboard user must be able to
   scroll it too, so each one that scrolls takes the focus (Tab) and is a region named after its
   cell ("Code of cell 12", "Output of cell 12": the number of the cell's In [12] prompt). The
   build takes nbconvert's nameless tabindex off every cell and output, so only what scrolls is
   a Tab stop. A folded solution is measured again when it opens. */
(function () {
  var SELECTOR = "main .jp-InputArea-editor, main .jp-OutputArea-output pre, " +
                 "main .jp-OutputArea-output";
  var cells = [].slice.call(document.querySelectorAll("main .jp-CodeCell"));

  function cellNumber(block) {
    var cell = block.closest(".jp-CodeCell");
    if (!cell) { return ""; }
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
      var code = block.classList.contains("jp-InputArea-editor");
      block.setAttribute("tabindex", "0");
      block.setAttribute("role", "region");
      block.setAttribute("data-mlm-scrolls", "");
      block.setAttribute("aria-label", (code ? "Code" : "Output") + " of cell " +
                         cellNumber(block));
    });
  }
  mark();
  window.addEventListener("resize", mark);
  document.querySelectorAll("main details").forEach(function (details) {
    details.addEventListener("toggle", mark);
  });
})();
