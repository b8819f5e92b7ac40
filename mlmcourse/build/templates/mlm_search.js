/* The site's offline search (mlmcourse/build/search_index.py writes window.MLM_SEARCH): an
   entry matches when its section holds every word typed; results are links to the section. */
(function () {
  var form = document.getElementById("mlm-search");
  if (!form) { return; }
  var box = document.getElementById("mlm-search-box");
  var count = document.getElementById("mlm-search-count");
  var list = document.getElementById("mlm-search-results");
  var LIMIT = 20;

  function snippet(text, word) {
    var at = text.toLowerCase().indexOf(word);
    var start = Math.max(0, at - 40);
    return (start > 0 ? "…" : "") + text.slice(start, start + 110) + "…";
  }

  function search() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.textContent = "";
    if (!words.length) { count.textContent = ""; return; }
    var entries = window.MLM_SEARCH || [];
    var hits = entries.filter(function (entry) {
      var text = (entry.section + " " + entry.text).toLowerCase();
      return words.every(function (word) { return text.indexOf(word) >= 0; });
    });
    count.textContent = hits.length === 0 ? "No section holds " + box.value :
      hits.length + (hits.length === 1 ? " section holds " : " sections hold ") + box.value +
      (hits.length > LIMIT ? " (the first " + LIMIT + " are listed)" : "");
    hits.slice(0, LIMIT).forEach(function (entry) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = entry.page + "#" + entry.anchor;
      link.textContent = entry.section;
      var where = document.createElement("span");
      where.className = "mlm-search-where";
      where.textContent = entry.title + ": " + snippet(entry.text, words[0]);
      item.appendChild(link);
      item.appendChild(where);
      list.appendChild(item);
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); search(); });
  box.addEventListener("input", search);
})();
