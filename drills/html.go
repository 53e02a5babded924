package drills

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// palette colours series in order; failures are always red.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}

const failColour = "#d62728"

// chart geometry, in SVG user units
const (
	chartW, chartH           = 860.0, 220.0
	marginL, marginR         = 70.0, 150.0
	marginT, marginB         = 20.0, 36.0
	plotW, plotH             = chartW - marginL - marginR, chartH - marginT - marginB
	timelineRow, timelineTop = 26.0, 50.0
)

type scale struct{ x0, x1, y0, y1 float64 }

func (s scale) x(v float64) float64 {
	if s.x1 <= s.x0 {
		return marginL
	}
	return marginL + (v-s.x0)/(s.x1-s.x0)*plotW
}

func (s scale) y(v float64) float64 {
	if s.y1 <= s.y0 {
		return marginT + plotH
	}
	return marginT + plotH - (v-s.y0)/(s.y1-s.y0)*plotH
}

// esc is the HTML encoder of every value on the page (text and quoted attributes alike): it
// escapes <, >, &, ' and ". Values were redacted before (WriteReports); nothing runs after it.
func esc(s string) string { return html.EscapeString(s) }

// Ticks are round values: steps of 1, 2 or 5 times a power of ten.

// niceStep is the smallest 1-2-5 step that divides span into at most target intervals.
func niceStep(span float64, target int) float64 {
	if !(span > 0) || math.IsInf(span, 0) || target < 1 {
		return 1
	}
	raw := span / float64(target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// niceTicks are the multiples of a 1-2-5 step from 0 (or below lo) through the first at or
// above hi: the axis runs from ticks[0] to the last tick. step is returned for the labels.
func niceTicks(lo, hi float64, target int) (ticks []float64, step float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	step = niceStep(hi-lo, target)
	first := math.Floor(lo/step+1e-9) * step
	for i := 0; i <= 4*target+2; i++ {
		v := first + float64(i)*step
		// round to the step's decimals so 0.1*3 prints and compares as 0.3
		v = roundTo(v, step)
		ticks = append(ticks, v)
		if v >= hi-step*1e-9 {
			break
		}
	}
	if len(ticks) == 1 {
		ticks = append(ticks, roundTo(first+step, step))
	}
	return ticks, step
}

// decimals is how many decimals a 1-2-5 step needs.
func decimals(step float64) int {
	if step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

func roundTo(v, step float64) float64 {
	p := math.Pow(10, float64(decimals(step)))
	return math.Round(v*p) / p
}

// tickLabel prints a tick with the step's decimals (no "0.30000000000000004").
func tickLabel(v, step float64) string {
	return strconv.FormatFloat(v, 'f', decimals(step), 64)
}

// axes draws the frame, ticks and labels, and returns the scale widened to the outer ticks.
func axes(b *strings.Builder, s scale, xLabel, yLabel string) scale {
	xt, xs := niceTicks(s.x0, s.x1, 6)
	yt, ys := niceTicks(s.y0, s.y1, 5)
	s = scale{xt[0], xt[len(xt)-1], yt[0], yt[len(yt)-1]}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`, marginL, marginT, plotW, plotH)
	for _, xv := range xt {
		x := s.x(xv)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text class="tick-x" x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`,
			x, marginT, x, marginT+plotH, x, marginT+plotH+14, tickLabel(xv, xs))
	}
	for _, yv := range yt {
		y := s.y(yv)
		fmt.Fprintf(b, `<text class="tick-y" x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>`, marginL-6, y+4, tickLabel(yv, ys))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`, marginL+plotW/2, chartH-4, esc(xLabel))
	fmt.Fprintf(b, `<text x="14" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, marginT+plotH/2, marginT+plotH/2, esc(yLabel))
	return s
}

// dashes and markers tell series apart where they overlap (and without colour).
var dashes = []string{"", "7 4", "2 3", "10 3 2 3", "4 4", "1 5"}

const faultColour = "#6a3d9a"

// marker draws shape i at (x, y).
func marker(b *strings.Builder, i int, x, y float64, fill, title string) {
	t := ""
	if title != "" {
		t = "<title>" + esc(title) + "</title>"
	}
	switch i % 4 {
	case 0:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.2" fill="%s">%s</circle>`, x, y, fill, t)
	case 1:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="6" height="6" fill="%s">%s</rect>`, x-3, y-3, fill, t)
	case 2:
		fmt.Fprintf(b, `<path d="M%.1f %.1f l4 6 h-8 z" fill="%s">%s</path>`, x, y-4, fill, t)
	default:
		fmt.Fprintf(b, `<path d="M%.1f %.1f l4 4 l-4 4 l-4 -4 z" fill="%s">%s</path>`, x, y-4, fill, t)
	}
}

func legend(b *strings.Builder, i int, colour, dash string, shape int, label string) {
	y := marginT + 8 + float64(i)*16
	x := chartW - marginR + 10
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5" stroke-dasharray="%s"/>`, x, y+2, x+18, y+2, colour, dash)
	if shape >= 0 {
		marker(b, shape, x+9, y+2, colour, "")
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`, x+24, y+5, esc(label))
}

// faultMarks marks each injected fault on the time axis: a dashed line over the plot and a
// numbered triangle under the axis (F1, F2 … as in the faults table); marks closer than a label
// are stacked.
func faultMarks(b *strings.Builder, rep *Report, s scale, top, bottom float64) {
	lastX, row := -100.0, 0
	for i, f := range rep.Faults {
		if f.At == nil {
			continue
		}
		x := s.x(*f.At)
		if x-lastX < 22 {
			row++
		} else {
			row = 0
		}
		lastX = x
		label := fmt.Sprintf("F%d", i+1)
		fmt.Fprintf(b, `<g class="fault-mark" data-fault="%s" data-at="%.3f"><title>fault %s injected at +%.2fs: %s</title>`, esc(f.Name), *f.At, label, *f.At, esc(f.Name))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.2" stroke-dasharray="3 3"/>`, x, top, x, bottom, faultColour)
		fmt.Fprintf(b, `<path d="M%.1f %.1f l-4 -6 h8 z" fill="%s"/>`, x, bottom, faultColour)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="%s" text-anchor="start">%s</text></g>`, x+3, top+9+float64(row)*10, faultColour, label)
	}
}

func svgOpen(b *strings.Builder, id, title string, height float64, series int) {
	fmt.Fprintf(b, `<svg class="chart" id="%s" data-series="%d" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s"><title>%s</title>`,
		esc(id), series, chartW, height, chartW, height, esc(title), esc(title))
}

// WeightsSVG draws one class's weight per region over time (from the journal): each region its
// colour, dash pattern and marker at every change, so lines that overlap stay apart.
func WeightsSVG(rep *Report, class string, end float64) string {
	var b strings.Builder
	byRegion := map[string][]WeightPoint{}
	maxW := 1.0
	for _, w := range rep.Weights {
		if w.Class == class {
			byRegion[w.Region] = append(byRegion[w.Region], w)
			maxW = math.Max(maxW, float64(w.Weight))
		}
	}
	regions := slices.Sorted(mapsKeys(byRegion))
	svgOpen(&b, "chart-weights-"+class, "router weight per region over time: class "+class, chartH, len(regions))
	s := axes(&b, scale{0, end, 0, maxW}, "seconds since the drill started", "weight")
	for i, region := range regions {
		pts := byRegion[region]
		var path strings.Builder
		for j, p := range pts {
			if j == 0 {
				fmt.Fprintf(&path, "M%.1f %.1f", s.x(p.Offset), s.y(float64(p.Weight)))
				continue
			}
			fmt.Fprintf(&path, " H%.1f V%.1f", s.x(p.Offset), s.y(float64(p.Weight)))
		}
		fmt.Fprintf(&path, " H%.1f", s.x(end))
		c, dash := palette[i%len(palette)], dashes[i%len(dashes)]
		fmt.Fprintf(&b, `<g class="series-group" data-region="%s"><path class="series" d="%s" fill="none" stroke="%s" stroke-width="2.5" stroke-dasharray="%s"/>`, esc(region), path.String(), c, dash)
		prev := -1
		for _, p := range pts {
			if p.Weight != prev {
				marker(&b, i, s.x(p.Offset), s.y(float64(p.Weight)), c, fmt.Sprintf("%s: weight %d at +%.2fs", region, p.Weight, p.Offset))
				prev = p.Weight
			}
		}
		b.WriteString(`</g>`)
		legend(&b, i, c, dash, i, region)
	}
	faultMarks(&b, rep, s, marginT, marginT+plotH)
	b.WriteString(`</svg>`)
	return b.String()
}

// TTFTSVG draws every synthetic request's time to first token, per class (each its colour and
// marker shape); failed requests are red crosses at the top.
func TTFTSVG(rep *Report, end float64) string {
	var b strings.Builder
	maxT := 1.0
	for _, r := range rep.Requests {
		if r.OK {
			maxT = math.Max(maxT, r.TTFTMS)
		}
	}
	classes := []string{}
	for _, c := range rep.Classes {
		classes = append(classes, c.Class)
	}
	svgOpen(&b, "chart-ttft", "time to first token per tenant class over time", chartH, len(classes))
	s := axes(&b, scale{0, end, 0, maxT}, "seconds since the drill started", "TTFT (ms)")
	failed := 0
	for i, c := range classes {
		col := palette[i%len(palette)]
		fmt.Fprintf(&b, `<g class="series" fill="%s">`, col)
		for _, r := range rep.Requests {
			if r.Class != c {
				continue
			}
			if !r.OK {
				failed++
				continue
			}
			marker(&b, i, s.x(r.Offset), s.y(r.TTFTMS), col, fmt.Sprintf("%s %.1fs → %s: %.1f ms", c, r.Offset, r.Region, r.TTFTMS))
		}
		b.WriteString(`</g>`)
		legend(&b, i, col, "1 100", i, c)
	}
	if failed > 0 {
		b.WriteString(`<g stroke="` + failColour + `" stroke-width="2">`)
		for _, r := range rep.Requests {
			if !r.OK {
				x, y := s.x(r.Offset), marginT+6
				fmt.Fprintf(&b, `<path d="M%.1f %.1f l6 6 m0 -6 l-6 6"><title>%s failed: %s</title></path>`, x-3, y-3, esc(r.Class), esc(r.Error))
			}
		}
		b.WriteString(`</g>`)
		legend(&b, len(classes), failColour, "", -1, "failed request")
	}
	faultMarks(&b, rep, s, marginT, marginT+plotH)
	b.WriteString(`</svg>`)
	return b.String()
}

// TimelineSVG draws each step as a bar over time, with the failover decision, the recovery and
// the RTO deadline as vertical lines, and each injected fault marked on the time axis.
func TimelineSVG(rep *Report) string {
	var b strings.Builder
	steps := []StepResult{}
	for _, st := range rep.Steps {
		if st.Status != Skipped {
			steps = append(steps, st)
		}
	}
	end := math.Max(rep.Seconds, 0.001)
	var decision, deadline, recovered float64 = -1, -1, -1
	if rep.SLA.Decision != nil {
		decision = rep.SLA.Decision.Sub(rep.Started).Seconds()
		deadline = decision + rep.SLA.RTOSeconds
		if deadline <= 3*end {
			end = math.Max(end, deadline*1.02)
		}
	}
	if rep.SLA.Recovered != nil {
		recovered = rep.SLA.Recovered.Sub(rep.Started).Seconds()
	}
	height := timelineTop + float64(len(steps))*timelineRow + marginB + 10
	xt, xs := niceTicks(0, end, 6)
	s := scale{x0: xt[0], x1: xt[len(xt)-1]}
	end = s.x1
	svgOpen(&b, "chart-timeline", "step timeline against the RTO", height, len(steps))
	bottom := timelineTop + float64(len(steps))*timelineRow
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, marginL, bottom, marginL+plotW, bottom)
	for _, xv := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text class="tick-x" x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`,
			s.x(xv), timelineTop-8, s.x(xv), bottom, s.x(xv), bottom+14, tickLabel(xv, xs))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">seconds since the drill started</text>`, marginL+plotW/2, bottom+30)
	for i, st := range steps {
		y := timelineTop + float64(i)*timelineRow
		col := palette[0]
		if st.Status == Failed || st.Status == Inconclusive {
			col = failColour
		}
		w := math.Max(s.x(st.Offset+st.Seconds)-s.x(st.Offset), 2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="end">%s</text>`, marginL-6, y+15, esc(st.Name))
		fmt.Fprintf(&b, `<rect class="series" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s, %.2f s</title></rect>`, s.x(st.Offset), y+4, w, timelineRow-8, col, esc(st.Name), esc(st.Status), st.Seconds)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">%.2fs</text>`, s.x(st.Offset)+w+4, y+15, st.Seconds)
	}
	vline := func(x float64, colour, dash, label string, row int) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`, s.x(x), timelineTop-8, s.x(x), bottom, colour, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="%s">%s</text>`, s.x(x)+4, 12+float64(row)*13, colour, esc(label))
	}
	if decision >= 0 {
		vline(decision, "#555", "2 3", "decision", 0)
	}
	if recovered >= 0 {
		vline(recovered, palette[2], "", fmt.Sprintf("recovered +%.2fs", recovered-decision), 1)
	}
	switch {
	case deadline >= 0 && deadline <= end:
		col := palette[2]
		if !rep.SLA.Met {
			col = failColour
		}
		vline(deadline, col, "6 4", fmt.Sprintf("RTO %gs", rep.SLA.RTOSeconds), 2)
	case deadline > end:
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">RTO deadline at %.0fs: off the chart →</text>`, marginL+plotW, 12+2*13.0, deadline)
	}
	faultMarks(&b, rep, s, timelineTop-8, bottom)
	b.WriteString(`</svg>`)
	return b.String()
}

// htmlScript marks the page once the browser has laid out every chart: data-charts-drawn is
// the number of charts whose every series has a non-empty box (a test reads it back).
const htmlScript = `(function(){
  var charts = document.querySelectorAll("svg.chart"), drawn = 0;
  charts.forEach(function(svg){
    var series = svg.querySelectorAll(".series"), ok = series.length > 0;
    series.forEach(function(s){ var bb = s.getBBox(); if (!(bb.width > 0 || bb.height > 0)) ok = false; });
    svg.setAttribute("data-drawn", ok ? "yes" : "no");
    if (ok) drawn++;
  });
  document.body.setAttribute("data-charts", String(charts.length));
  document.body.setAttribute("data-charts-drawn", String(drawn));
})();`

// scriptHash is the CSP source of htmlScript, the page's only script: the policy runs no other
// (no 'unsafe-inline'), so no text that reached the page can become a script.
var scriptHash = func() string {
	sum := sha256.Sum256([]byte(htmlScript))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}()

// WriteHTML renders report.html: one self-contained file (no external asset; the content
// security policy forbids loading any), charts as inline SVG.
func WriteHTML(w *bytes.Buffer, rep *Report) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	verdictCol := palette[2]
	if !rep.OK {
		verdictCol = failColour
	}
	p(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src '%s'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>DR drill %s: %s</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%%;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5}.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;background:%s;font-weight:600}
.ok{color:#2ca02c;font-weight:600}.bad{color:#d62728;font-weight:600}code{font-size:12px}svg.chart{max-width:100%%;height:auto;display:block;margin:8px 0}
</style></head><body>
`, scriptHash, esc(rep.Drill), esc(rep.Verdict), verdictCol)
	p(`<h1>DR drill <code>%s</code> <span class="verdict">%s</span></h1>`, esc(rep.Drill), esc(rep.Verdict))
	rec := "not measured"
	if rep.SLA.RecoverySeconds != nil {
		rec = fmt.Sprintf("%.2f s", *rep.SLA.RecoverySeconds)
	}
	p(`<p>Model <b>%s</b>, lost region <b>%s</b>, router <code>%s</code>; %s → %s (%.1f s).</p>`, esc(rep.Model), esc(rep.Lost), esc(rep.Router),
		rep.Started.Format("2006-01-02 15:04:05 MST"), rep.Finished.Format("15:04:05 MST"), rep.Seconds)
	p(`<p>Recovery time: <b>%s</b> against an RTO of %g s: <span class="%s">%s</span></p>`,
		rec, rep.SLA.RTOSeconds, okClass(rep.SLA.Met), esc(rep.SLA.Detail))
	p(`<p class="covers">What it covers: %s.</p>`, esc(RecoveryCovers))
	p(`<p class="summary">%s</p>`, esc(rep.Summary))
	p("<h2>Evidence</h2><table class=\"evidence\">\n")
	for _, e := range rep.EvidenceRows() {
		p("<tr><th>%s</th><td data-key=\"%s\">%s</td></tr>\n", esc(e.Label), esc(e.Key), htmlText(e.Value))
	}
	p("</table>\n")
	end := math.Max(rep.Seconds, 0.001)
	p("<h2>Step timeline against the RTO</h2>\n%s\n", TimelineSVG(rep))
	if len(rep.Weights) > 0 {
		p("<h2>Router weights per region over time</h2>\n")
		for _, c := range rep.Classes {
			p("<h3>%s</h3>\n%s\n", esc(c.Class), WeightsSVG(rep, c.Class, end))
		}
	}
	if len(rep.Requests) > 0 {
		p("<h2>Time to first token per tenant class over time</h2>\n%s\n", TTFTSVG(rep, end))
	}
	p("<h2>Steps</h2><table><tr><th>step</th><th>status</th><th>started</th><th>took</th><th>detail</th></tr>\n")
	for _, s := range rep.Steps {
		p("<tr><td>%s</td><td class=\"%s\">%s</td><td>+%.2f s</td><td>%.2f s</td><td>%s</td></tr>\n", esc(s.Name), stepClass(s.Status), esc(s.Status), s.Offset, s.Seconds, esc(s.Detail))
	}
	p("</table>\n")
	if len(rep.Faults) > 0 {
		p("<h2>Injected faults</h2><table><tr><th></th><th>fault</th><th>injected</th><th>at</th><th>detected</th><th>evidence</th></tr>\n")
		for i, f := range rep.Faults {
			p("<tr><td>F%d</td><td>%s</td><td class=\"%s\">%v</td><td>%s</td><td class=\"%s\">%v</td><td>%s</td></tr>\n", i+1, esc(f.Name), okClass(f.Injected), f.Injected, atOffset(f.At), okClass(f.Detected), f.Detected, esc(f.Evidence))
		}
		p("</table>\n")
	}
	p("<h2>Expected outcomes</h2><table><tr><th>expectation</th><th>met</th><th>evidence</th></tr>\n")
	for _, e := range rep.Expect {
		p("<tr><td>%s</td><td class=\"%s\">%v</td><td>%s</td></tr>\n", esc(e.Description), okClass(e.Met), e.Met, esc(e.Evidence))
	}
	p("</table>\n")
	for _, v := range rep.Verify {
		p("<h2>Verification (%s)</h2><table><tr><th>region</th><th>replica</th><th>mode</th><th>status</th><th>problems</th></tr>\n", esc(v.Phase))
		for _, r := range v.Replicas {
			p("<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(r.Region), esc(r.URL), esc(r.Mode), esc(r.Status), esc(strings.Join(r.Problems, ", ")+" "+r.Error))
		}
		p("</table>\n")
	}
	if len(rep.Boots) > 0 {
		p("<h2>Candidates booted</h2><table><tr><th>region</th><th>role</th><th>verdict</th><th>warm after</th><th>probe TTFT</th><th>reason</th></tr>\n")
		for _, b := range rep.Boots {
			p("<tr><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(b.Region), esc(bootRole(b)), okClass(b.OK), esc(b.Verdict), fsec(b.WarmS, "s"), fmsec(b.TTFTS), esc(b.Reason))
		}
		p("</table>\n")
	}
	if len(rep.Classes) > 0 {
		p("<h2>Traffic per tenant class</h2><table><tr><th>class</th><th>eligible</th><th>requests</th><th>failed</th><th>outside eligible</th><th>landed</th><th>TTFT p50</th><th>TTFT max</th></tr>\n")
		for _, c := range rep.Classes {
			p("<tr><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td class=\"%s\">%d</td><td>%s</td><td>%.1f ms</td><td>%.1f ms</td></tr>\n", esc(c.Class), esc(strings.Join(c.Eligible, ", ")), c.Requests, c.Failed, okClass(c.Outside == 0), c.Outside, esc(regionCounts(c.ByRegion)), c.TTFTP50MS, c.TTFTMaxMS)
		}
		p("</table>\n")
	}
	if failed := failedRequests(rep); len(failed) > 0 {
		p("<h2>Failed requests</h2><table class=\"failed-requests\"><tr><th>at</th><th>phase</th><th>class</th><th>region</th><th>via</th><th>reason</th></tr>\n")
		for i, r := range failed {
			if i == maxFailedShown {
				break
			}
			p("<tr><td>%+.2f s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"reason\">%s</td></tr>\n", r.Offset, esc(r.Phase), esc(r.Class), esc(orDash(r.Region)), esc(orDash(r.Via)), esc(r.Error))
		}
		p("</table>\n")
		if len(failed) > maxFailedShown {
			p("<p>… and %d more (every request is in report.json).</p>\n", len(failed)-maxFailedShown)
		}
	}
	if len(rep.StopChecks) > 0 {
		p("<h2>Stop conditions</h2><p>Evaluated before each ramp and fail-back write.</p><table><tr><th>time</th><th>before step</th><th>condition</th><th>result</th><th>why</th><th>query</th></tr>\n")
		for _, c := range rep.StopChecks {
			step, name, res := stopRow(c)
			p("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"reason\">%s</td><td><code>%s</code></td></tr>\n", c.Time.Format("15:04:05"), step, esc(name), res, esc(c.Why), esc(c.Query))
		}
		p("</table>\n")
	}
	td := rep.Teardown
	p("<h2>Teardown</h2><p>Stopped %d candidate(s); faults put back: %s; temp dir removed: %v; lock released: %v; left behind: %s.</p>\n",
		len(td.Stopped), esc(orNone(td.FaultsUndone)), td.TempRemoved, td.LockReleased, esc(orNone(td.Left)))
	p("<script>%s</script>\n</body></html>\n", htmlScript)
	return nil
}

func atOffset(at *float64) string {
	if at == nil {
		return "—"
	}
	return fmt.Sprintf("+%.2f s", *at)
}

func okClass(ok bool) string {
	if ok {
		return "ok"
	}
	return "bad"
}

func stepClass(status string) string {
	if status == Failed || status == Inconclusive {
		return "bad"
	}
	if status == Passed {
		return "ok"
	}
	return ""
}

// htmlText is a value whose `backticked` parts are code (EvidenceRow values): those become
// <code> elements, every part escaped; no backtick is shown.
func htmlText(s string) string {
	var b strings.Builder
	for _, seg := range codeSegments(s) {
		if seg.code {
			b.WriteString("<code>" + esc(seg.text) + "</code>")
		} else {
			b.WriteString(esc(seg.text))
		}
	}
	return b.String()
}
