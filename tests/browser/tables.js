// The kineto report's tables, checked in the browser (run.sh's `probe` wraps this in a function with
// `bad`, which logs to the console and so fails the test). The top table of each rank: the kernel name first
// and whole in its tooltip; every header with its column's doc; one unit per time column, in its header;
// numbers right-aligned; a click on `total` sorts ascending by the exact value (data-v), a second click
// descending; a click on `kernel` sorts the names as text.
var tops = Array.prototype.filter.call(document.querySelectorAll('table.sortable'), function (t) {
    return t.tHead.rows[0].cells[0].textContent.indexOf('kernel') === 0;
});
if (tops.length !== 2) { bad('expected one top table per rank (2), found ' + tops.length); return; }
var t = tops[0], hs = t.tHead.rows[0].cells;
var want = ['kernel', 'family', 'bucket', 'count', 'total', 'share', 'mean', 'median', 'min', 'max'];
if (hs.length !== want.length) { bad('top headers: ' + hs.length); return; }
for (var i = 0; i < want.length; i++) {
    if (hs[i].textContent.indexOf(want[i]) !== 0) { bad('header ' + i + ' is ' + hs[i].textContent); return; }
    if (!hs[i].getAttribute('title')) { bad('header ' + hs[i].textContent + ' has no tooltip'); return; }
}
if (!/^total \((µs|ms)\)$/.test(hs[4].textContent)) { bad('total header without its unit: ' + hs[4].textContent); return; }
if (hs[5].textContent !== 'share (%)') { bad('share header: ' + hs[5].textContent); return; }
if (/_(ns|us)\b/.test(t.tHead.textContent)) { bad('a raw JSON key in a header'); return; }
var names = t.querySelectorAll('td.name');
if (names.length !== t.tBodies[0].rows.length) { bad('a row without its name cell'); return; }
for (var n = 0; n < names.length; n++) {
    if (names[n].getAttribute('title') !== names[n].textContent) { bad('name tooltip differs: ' + names[n].textContent); return; }
}
var cut = Array.prototype.filter.call(names, function (c) { return c.scrollWidth > c.clientWidth; }).length;
var num = t.tBodies[0].rows[0].cells[4];
if (getComputedStyle(num).textAlign !== 'right' || getComputedStyle(hs[4]).textAlign !== 'right') { bad('numbers not right-aligned'); return; }
function col(c) {
    var v = [];
    for (var r = 0; r < t.tBodies[0].rows.length; r++) v.push(parseFloat(t.tBodies[0].rows[r].cells[c].getAttribute('data-v')));
    return v;
}
function sorted(v, asc) { for (var i = 1; i < v.length; i++) if (asc ? v[i - 1] > v[i] : v[i - 1] < v[i]) return false; return true; }
hs[4].click();
if (!sorted(col(4), true) || hs[4].getAttribute('aria-sort') !== 'ascending') { bad('total not ascending after a click'); return; }
hs[4].click();
if (!sorted(col(4), false) || hs[4].getAttribute('aria-sort') !== 'descending') { bad('total not descending after a second click'); return; }
hs[0].click();
var rows = t.tBodies[0].rows;
for (var r = 1; r < rows.length; r++) {
    if (rows[r - 1].cells[0].textContent.localeCompare(rows[r].cells[0].textContent) > 0) { bad('names not sorted as text'); return; }
}
document.documentElement.setAttribute('data-probe', 'ok:' + rows.length + ' rows sorted by total both ways and by name, ' +
    names.length + ' name tooltips, ' + cut + ' names cut (whole in their tooltip)');
