/* The site's offline search (mlmcourse/build/search_index.py writes window.MLM_SEARCH). An
   entry matches when its page title, section title or text holds every word typed; hits are
   ranked by relevance (a word in the section's title counts most, then in the page's title,
   then how often the text says it, up to three times; ties go to the earlier page, where the
   course introduces a term), the first PAGE listed and a button shows the rest. A hit's
   link carries the query (?q=), so the page it opens shows the same search again. */
(function () {
  var form = document.getElementById("mlm-search");
  if (!form) { return; }
  var box = document.getElementById("mlm-search-box");
  var count = document.getElementById("mlm-search-count");
  var list = document.getElementById("mlm-search-results");
  var more = document.getElementById("mlm-search-more");
  var PAGE = 20;
  var hits = [];
  var words = [];

  function occurrences(text, word) {
    var found = 0;
    for (var at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + word.length)) {
      found += 1;
    }
    return found;
  }

  function score(entry) {
    var section = entry.section.toLowerCase();
    var title = entry.title.toLowerCase();
    var text = entry.text.toLowerCase();
    var total = 0;
    for (var i = 0; i < words.length; i++) {
      var inSection = occurrences(section, words[i]);
      var inTitle = occurrences(title, words[i]);
      var inText = occurrences(text, words[i]);
      if (!inSection && !inTitle && !inText) { return 0; }
      total += 20 * Math.min(inSection, 1) + 5 * Math.min(inTitle, 1) + Math.min(inText, 3);
    }
    return total;
  }

  function snippet(text) {
    var lower = text.toLowerCase();
    var at = Math.max(0, lower.indexOf(words[0]));
    var start = Math.max(0, at - 40);
    var end = Math.min(text.length, start + 120);
    return (start > 0 ? "…" : "") + text.slice(start, end) + (end < text.length ? "…" : "");
  }

  function show(from, to) {
    for (var i = from; i < to; i++) {
      var entry = hits[i].entry;
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = entry.page + "?q=" + encodeURIComponent(box.value.trim()) + "#" +
        entry.anchor;
      link.textContent = entry.section;
      var where = document.createElement("span");
      where.className = "mlm-search-where";
      where.textContent = entry.title + ": " + snippet(entry.text);
      item.appendChild(link);
      item.appendChild(where);
      list.appendChild(item);
    }
    var left = hits.length - to;
    more.hidden = left <= 0;
    more.textContent = "Show the other " + left + (left === 1 ? " section" : " sections");
  }

  function search() {
    words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.textContent = "";
    hits = [];
    if (!words.length) { count.textContent = ""; more.hidden = true; return; }
    (window.MLM_SEARCH || []).forEach(function (entry, order) {
      var points = score(entry);
      if (points > 0) { hits.push({entry: entry, points: points, order: order}); }
    });
    hits.sort(function (a, b) { return b.points - a.points || a.order - b.order; });
    var query = box.value.trim();
    count.textContent = hits.length === 0 ? "No section holds " + query :
      hits.length + (hits.length === 1 ? " section holds " : " sections hold ") + query +
      ", best first";
    show(0, Math.min(PAGE, hits.length));
  }

  more.addEventListener("click", function () {
    var shown = list.children.length;
    show(shown, hits.length);
    var next = list.children[shown] && list.children[shown].querySelector("a");
    if (next) { next.focus(); }
  });
  form.addEventListener("submit", function (event) { event.preventDefault(); search(); });
  box.addEventListener("input", search);
  var kept = new URLSearchParams(window.location.search).get("q");
  if (kept) {
    box.value = kept;
    search();
  }
})();
