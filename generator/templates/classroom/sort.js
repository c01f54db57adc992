// Click a header of a .class-sortable table to sort by that column (numbers by data-sort or value); again: reversed.
(function () {
  function key(cell) {
    var text = cell.getAttribute("data-sort") || cell.textContent.trim();
    var number = parseFloat(text);
    return isNaN(number) ? text.toLowerCase() : number;
  }
  function attach() {
    document.querySelectorAll("table.class-sortable th").forEach(function (th) {
      if (th.dataset.sortReady) return;
      th.dataset.sortReady = "1";
      th.addEventListener("click", function () {
        var body = th.closest("table").tBodies[0], column = th.cellIndex, up = th.dataset.up !== "1";
        th.dataset.up = up ? "1" : "0";
        Array.from(body.rows).sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        }).forEach(function (row) { body.appendChild(row); });
      });
    });
  }
  if (typeof document$ !== "undefined") document$.subscribe(attach); else document.addEventListener("DOMContentLoaded", attach);
  attach();
})();
