// The timeline of testdata/synthetic/sglang_steps.json's whole-trace step (`kineto report --whole-trace`),
// counted by hand from the trace's events (run.sh's `probe` wraps this in a function with `bad`):
//   stream 7: kernels at 1000 (100 µs), 1100 (20), 1120 (30), 1200 (10), 1300 (50), 1340.001 (20) and the
//             copy at 1400 (10): 7 ops;
//   stream 8: kernels at 900 (10), 1050 (100, ncclKernel_AllReduce…), 1500 (5): 3 ops;
//   stream 9: the kernel at 1060 (10): 1 op.
// The window is 900‥1505 µs; the union of the ops leaves 5 gaps: 910‥1000, 1150‥1200, 1210‥1300,
// 1360.001‥1400, 1410‥1500. Hovering the nccl kernel names it, its bucket (comm), its stream, its start
// (1050 − 900 = +150 µs) and its duration (100 µs).
// The doctor's findings there: copies_in_step — the HtoD copy 1400‥1410 runs with no kernel beside it
// (stream 7's last kernel ends at 1360.001, stream 8's next starts at 1500), so the first mark lane,
// `copies_in_step`, holds one mark at +500 µs (1400 − 900) for 10 µs, within the step's window; and
// fp32_simt_gemm — the four volta_sgemm kernels (cuBLAS's fp32 SIMT GEMMs) at 900 (10 µs), 1000 (100),
// 1060 (10) and 1300 (50): a second lane of 4 marks, 10 + 100 + 10 + 50 = 170 µs.
var svg = document.querySelectorAll('div.timeline svg');
if (svg.length !== 1) { bad('timelines drawn: ' + svg.length); return; }
var lanes = Array.prototype.map.call(svg[0].querySelectorAll('text.tl-lane'), function (e) { return e.textContent; });
if (lanes.join('|') !== 'stream 7|stream 8|stream 9') { bad('lanes: ' + lanes.join('|')); return; }
var ops = svg[0].querySelectorAll('rect.tl-op'), per = [0, 0, 0];
for (var i = 0; i < ops.length; i++) per[+ops[i].getAttribute('data-lane')]++;
if (ops.length !== 11 || per.join(',') !== '7,3,1') { bad('ops: ' + ops.length + ' (' + per.join(',') + ')'); return; }
var gaps = svg[0].querySelectorAll('rect.tl-gap');
if (gaps.length !== 5) { bad('gaps: ' + gaps.length); return; }
var D = JSON.parse(document.getElementById('derived-json').textContent).timelines[0], nccl = null;
for (var k = 0; k < ops.length; k++) {
    if (D.names[D.bars[+ops[k].getAttribute('data-i')][5]].indexOf('ncclKernel_AllReduce') === 0) nccl = ops[k];
}
if (!nccl) { bad('no nccl bar'); return; }
var box = nccl.getBoundingClientRect();
nccl.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: box.left + 1, clientY: box.top + 1 }));
var tip = document.querySelector('div.tl-tip'), text = tip ? tip.textContent : '';
var want = ['ncclKernel_AllReduce', 'comm · stream 8', 'start +150.0 µs · duration 100.0 µs'];
for (var w = 0; w < want.length; w++) {
    if (text.indexOf(want[w]) < 0) { bad('hover text lacks "' + want[w] + '": ' + text); return; }
}
if (tip.style.display !== 'block') { bad('the tooltip is not shown'); return; }
if (document.body.textContent.indexOf('Every op is drawn (11 bars).') < 0) { bad('the page does not say every op is drawn'); return; }
var markLanes = Array.prototype.map.call(svg[0].querySelectorAll('text.tl-mark-lane'), function (e) { return e.textContent; });
if (markLanes.join('|') !== 'copies_in_step|fp32_simt_gemm') { bad('mark lanes: ' + markLanes.join('|')); return; }
var marks = svg[0].querySelectorAll('rect.tl-mark[data-lane="0"]');
if (marks.length !== 1) { bad('copies_in_step marks drawn: ' + marks.length); return; }
var simt = svg[0].querySelectorAll('rect.tl-mark[data-lane="1"]');
if (simt.length !== 4) { bad('fp32_simt_gemm marks drawn: ' + simt.length); return; }
var mbox = marks[0].getBoundingClientRect();
marks[0].dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: mbox.left + 1, clientY: mbox.top + 1 }));
var mtext = tip.textContent;
var mwant = ['copies_in_step 10 µs', 'start +500.0 µs · drawn 10.00 µs'];
for (var q = 0; q < mwant.length; q++) {
    if (mtext.indexOf(mwant[q]) < 0) { bad('mark hover text lacks "' + mwant[q] + '": ' + mtext); return; }
}
var legend = document.querySelector('.tl-mark-legend span[data-finding="copies_in_step"]');
if (!legend || legend.textContent.indexOf('copies_in_step (1 mark, 10 µs)') < 0) { bad('mark legend: ' + (legend ? legend.textContent : 'none')); return; }
var slegend = document.querySelector('.tl-mark-legend span[data-finding="fp32_simt_gemm"]');
if (!slegend || slegend.textContent.indexOf('fp32_simt_gemm (4 marks, 170 µs)') < 0) { bad('mark legend: ' + (slegend ? slegend.textContent : 'none')); return; }
// The mark sits where the copy's bar is: the same left edge (within a pixel) as the HtoD copy's.
var copy = null;
for (var c = 0; c < ops.length; c++) {
    if (D.names[D.bars[+ops[c].getAttribute('data-i')][5]].indexOf('Memcpy HtoD') === 0) copy = ops[c];
}
if (!copy || Math.abs(copy.getBoundingClientRect().left - mbox.left) > 1) { bad('the mark is not above the copy'); return; }
document.documentElement.setAttribute('data-probe', 'ok:3 lanes, 11 ops (7, 3, 1), 5 gaps, hover: ' + text.split('\n')[1] + ' / ' + text.split('\n')[2] +
    '; 2 mark lanes, mark hover: ' + mtext.split('\n').join(' / '));
