package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart is a line chart of series: seconds against cluster size.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Width and Height in pixels; default 720×420.
	Width, Height int
}

// chartColors are the series colours, in order.
var chartColors = [...]string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// WriteSVG writes the chart as a standalone SVG document (no scripts, no external resources).
// A series with one point is drawn as a marker only.
func (c Chart) WriteSVG(w io.Writer) error {
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 720
	}
	if height <= 0 {
		height = 420
	}
	const left, right, top, bottom = 64.0, 180.0, 40.0, 52.0
	pw, ph := float64(width)-left-right, float64(height)-top-bottom
	xmax, ymax := 1.0, 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			xmax = math.Max(xmax, float64(p.Nodes))
			if !math.IsNaN(p.Seconds) && !math.IsInf(p.Seconds, 0) {
				ymax = math.Max(ymax, p.Seconds)
			}
		}
	}
	xstep, ystep := math.Max(niceStep(xmax), 1), niceStep(ymax)
	xmax = math.Ceil(xmax/xstep) * xstep
	ymax = math.Max(math.Ceil(ymax/ystep)*ystep, ystep)
	px := func(x float64) float64 { return left + x/xmax*pw }
	py := func(y float64) float64 { return top + ph - y/ymax*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%g" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	// Grid and ticks.
	for x := 0.0; x <= xmax+xstep/2; x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px(x), top, px(x), top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), top+ph+16, FormatValue(x))
	}
	for y := 0.0; y <= ymax+ystep/2; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(y), left+pw, py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, FormatValue(y))
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, height-12, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", top+ph/2, top+ph/2, esc(c.YLabel))
	// Series and legend.
	for i, s := range c.Series {
		color := chartColors[i%len(chartColors)]
		var pts []string
		for _, p := range s.Points {
			if math.IsNaN(p.Seconds) || math.IsInf(p.Seconds, 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(p.Nodes)), py(p.Seconds)))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		}
		for _, pt := range pts {
			x, y, _ := strings.Cut(pt, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, color)
		}
		ly := top + 8 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", left+pw+12, ly, left+pw+32, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+pw+38, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten giving at most ~8 ticks up to
// max.
func niceStep(max float64) float64 {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		return 1
	}
	raw := max / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func esc(s string) string { return html.EscapeString(s) }
