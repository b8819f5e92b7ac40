/* A notebook's page: the reader's view and the figures.
   - "Show the grading" (a toggle button) shows the points in the headings and opens every
     folded graded part (imports, self-checks, what the hidden tests check); pressed again, it
     folds them back. The reader's view (folded) is where a page starts.
   - Each figure gets a button that opens it full size in a dialog that scrolls (Escape or the
     Close button closes it; the focus returns to the button). */
(function () {
  var toggle = document.getElementById("mlm-grading");
  if (toggle) {
    toggle.addEventListener("click", function () {
      var show = toggle.getAttribute("aria-pressed") !== "true";
      toggle.setAttribute("aria-pressed", show ? "true" : "false");
      document.body.classList.toggle("mlm-grading-shown", show);
      document.querySelectorAll("main details.mlm-graded").forEach(function (details) {
        details.open = show;
      });
    });
  }

  var dialog = null;
  function lightbox() {
    if (dialog) { return dialog; }
    dialog = document.createElement("dialog");
    dialog.className = "mlm-lightbox";
    dialog.setAttribute("aria-label", "The figure, full size");
    dialog.innerHTML = '<div class="mlm-lightbox-bar"><span>The figure at full size: ' +
      'scroll to see all of it.</span><button type="button">Close</button></div>' +
      '<div class="mlm-lightbox-picture" tabindex="0" role="region" ' +
      'aria-label="The figure, full size"></div>';
    dialog.querySelector("button").addEventListener("click", function () { dialog.close(); });
    document.body.appendChild(dialog);
    return dialog;
  }

  document.querySelectorAll("main figure img, main .mlm-snapshot img").forEach(function (img) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "mlm-zoom";
    button.textContent = "Open the figure full size";
    button.addEventListener("click", function () {
      var box = lightbox();
      var picture = box.querySelector(".mlm-lightbox-picture");
      var copy = img.cloneNode(false);
      copy.removeAttribute("width");
      copy.removeAttribute("height");
      copy.removeAttribute("style");
      picture.textContent = "";
      picture.appendChild(copy);
      box.onclose = function () { button.focus(); };
      box.showModal();
    });
    img.insertAdjacentElement("afterend", button);
  });
})();
