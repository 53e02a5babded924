package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

func isTTY(fd uintptr) bool { return term.IsTerminal(int(fd)) }

// progress draws a one-line bar on a terminal: bytes done, total, rate. On anything else it draws
// nothing, so logs and CI output stay clean.
type progress struct {
	w     io.Writer
	label string
	total atomic.Int64
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

// newProgress is a progress bar on stderr, or none with --quiet.
func (a *app) newProgress(label string) *progress {
	if a.quiet {
		return newProgress(io.Discard, label)
	}
	if !isTerminal(a.stderr) {
		return newProgress(io.Discard, label)
	}
	return newProgress(a.rawStderr, label) // its label is Lifeboat's; its escapes must pass
}

// newProgress starts a bar on w if w is a terminal; otherwise it returns a bar that only counts.
func newProgress(w io.Writer, label string) *progress {
	p := &progress{w: w, label: label, start: time.Now(), stop: make(chan struct{})}
	if !isTerminal(w) {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(150 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

func (p *progress) Add(n int64)         { p.done.Add(n) }
func (p *progress) SetTotal(_, n int64) { p.total.Store(n) }

func (p *progress) draw() {
	done, total := p.done.Load(), p.total.Load()
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	const width = 30
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	fmt.Fprintf(p.w, "\r\033[K%s [%s] %3.0f%%  %s / %s  %s/s", p.label, bar, frac*100, humanBytes(done), humanBytes(total), humanBytes(int64(rate)))
}

// Done stops the bar and clears its line.
func (p *progress) Done() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}

// humanBytes renders a byte count with decimal units, as storage consoles do.
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
