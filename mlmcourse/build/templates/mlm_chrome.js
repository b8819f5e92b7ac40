/* The phone's Menu button unfolds the navigation (CSS keeps it folded below 800px until the
   menu has the class mlm-open); following a link of the open menu folds it again. */
(function () {
  var button = document.querySelector(".mlm-menu-button");
  var menu = document.getElementById("mlm-menu");
  if (!button || !menu) { return; }
  function set(open) {
    menu.classList.toggle("mlm-open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  button.addEventListener("click", function () { set(!menu.classList.contains("mlm-open")); });
  menu.addEventListener("click", function (event) {
    if (event.target.closest("a[href]")) { set(false); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && menu.classList.contains("mlm-open")) {
      set(false);
      button.focus();
    }
  });
})();
