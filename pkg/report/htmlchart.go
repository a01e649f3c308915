package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/replay"
)

// A replay's totals over its course are drawn as a small inline SVG: one
// strip per series (the deliveries, each outcome that occurred, the
// crashes), each named in words and scaled to its own largest bucket, so
// that a rare outcome shows where it came however few there were, and
// nothing is told by colour alone. A strip is one path of a step per
// bucket: the chart of a replay of any length stays a few KB.

// htmlChart is the chart of a replay's totals over its course.
type htmlChart struct {
	Caption       string
	Width, Height int // of the viewBox
	Strips        []htmlStrip
	From, To      string // the ends of the axis
	AxisY         int
	PlotX, PlotW  int
	// Settled marks where the deliveries ended and the replay waited
	// for a broker's consumer; nil when it did not.
	Settled *htmlMark
}

// htmlMark is a labelled vertical line across the chart's strips.
type htmlMark struct {
	X, Y1, Y2, TextX int
	Label            string
}

// htmlStrip is one series of the chart.
type htmlStrip struct {
	Label        string
	Class        string
	TextY, Base  int
	Path         string
	X0, X1, Line int
}

const (
	chartLabelW = 310 // the labels' column, in viewBox units
	chartStep   = 8   // one bucket's width, at least
	chartPlotW  = 400 // the plot's width, at least: its ends' labels do not meet
	chartStripH = 22  // a strip's height
	chartGap    = 6
)

// chartOf draws over: outcomes names its outcomes in the order the
// buckets count them; capture says whether its places are the capture's
// deliveries (else milliseconds).
func chartOf(over replay.Over, outcomes []htmlOutcome, capture bool) *htmlChart {
	n := len(over.Buckets)
	if n == 0 {
		return nil
	}
	w := over.Width()
	step := max(chartStep, chartPlotW/n)
	c := &htmlChart{PlotX: chartLabelW, PlotW: n * step, Width: chartLabelW + n*step + 4}
	top := 0 // the mark of the wait for a broker's consumer is labelled above the strips
	if !capture && over.Settled > 0 {
		top = chartStripH
	}
	scale := stripScale{over: over, step: step, top: top}
	c.addStrip(scale, "all deliveries", "all", func(b replay.Bucket) int64 {
		s := int64(0)
		for _, x := range b.Outcomes {
			s += x
		}
		return s
	})
	for k, o := range outcomes {
		c.addStrip(scale, o.Glyph+" "+o.Word, "o-"+o.Class, func(b replay.Bucket) int64 { return b.Outcomes[k] })
	}
	c.addStrip(scale, "↯ crashes", "crashes", func(b replay.Bucket) int64 { return b.Crashes })
	c.AxisY = top + len(c.Strips)*(chartStripH+chartGap) + 14
	c.Height = c.AxisY + 4
	end := over.Places()
	if top > 0 {
		x := chartLabelW + int(over.Settled*int64(step)/w)
		c.Settled = &htmlMark{X: x, Y1: 4, Y2: c.AxisY - 10, TextX: x + 4,
			Label: "+" + span(time.Duration(over.Settled)*time.Millisecond) + ": the last publish; then the wait for the consumer"}
	}
	if capture {
		c.From, c.To = "capture delivery 1", "capture delivery "+strconv.FormatInt(end, 10)
		c.Caption = fmt.Sprintf("The deliveries over the capture, in %s of %s: a redelivery counts where the delivery it repeats stands in the capture.",
			count(int64(n), "step", "steps"), count(w, "capture delivery", "capture deliveries"))
	} else {
		c.From, c.To = "+0 ms", "+"+span(time.Duration(end)*time.Millisecond)
		c.Caption = fmt.Sprintf("The deliveries over the time since the replay began, in %s of %s.", count(int64(n), "step", "steps"), span(time.Duration(w)*time.Millisecond))
		if over.Settled > 0 {
			c.Caption += fmt.Sprintf(" The publishes ended at +%s; the consumer took what was published until +%s.",
				span(time.Duration(over.Settled)*time.Millisecond), span(time.Duration(end)*time.Millisecond))
		}
	}
	return c
}

// stripScale is what places a chart's strips: the buckets they draw, a
// bucket's width, and the room left above the first strip.
type stripScale struct {
	over      replay.Over
	step, top int
}

// addStrip draws one series, v of each bucket, as a strip below the
// chart's others, scaled to its own largest bucket. A series that counts
// nothing gets no strip.
func (c *htmlChart) addStrip(s stripScale, label, class string, v func(b replay.Bucket) int64) {
	var most, sum int64
	for _, b := range s.over.Buckets {
		x := v(b)
		most, sum = max(most, x), sum+x
	}
	if sum == 0 {
		return
	}
	n := len(s.over.Buckets)
	y := s.top + len(c.Strips)*(chartStripH+chartGap) + 2
	base := y + chartStripH
	var p strings.Builder
	fmt.Fprintf(&p, "M%d,%d", chartLabelW, base)
	for _, b := range s.over.Buckets {
		h := (v(b)*chartStripH + most - 1) / most // a bucket that counts one shows
		fmt.Fprintf(&p, "V%dh%d", base-int(h), s.step)
	}
	fmt.Fprintf(&p, "V%dZ", base)
	c.Strips = append(c.Strips, htmlStrip{Label: fmt.Sprintf("%s: %d, at most %d a step", label, sum, most), Class: class,
		TextY: base - 6, Base: base, Path: p.String(), X0: chartLabelW, X1: chartLabelW + n*s.step, Line: base})
}

// chartCrashes is how many crashes the chart placed.
func chartCrashes(over replay.Over) int64 {
	var n int64
	for _, b := range over.Buckets {
		n += b.Crashes
	}
	return n
}
