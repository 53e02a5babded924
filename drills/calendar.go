package drills

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/failover"
	"lifeboat/internal/base/yamlnode"
)

// Calendar is when a drill does not start: blocked windows of the week, blocked dates, and stop
// conditions of the fleet that block it while they fail (ARC practice runs' blockedWindows,
// blockedDates and blocking alarms). `drill run` inside one skips the drill (exit 0, one line,
// recorded in the history) unless --ignore-calendar.
type Calendar struct {
	// Timezone is where blocked_dates are dates and the default of each window's ("" UTC).
	Timezone string         `json:"timezone,omitempty"`
	Windows  []Window       `json:"blocked_windows,omitempty"`
	Dates    []string       `json:"blocked_dates,omitempty"` // YYYY-MM-DD
	Blocking []string       `json:"blocking_conditions,omitempty"`
	loc      *time.Location // of Timezone
	// BlockingLine is where blocking_conditions is, for the check against the fleet.
	BlockingLine int `json:"-"`
}

// Window is one blocked window: on each of Days (all week when empty), from Start to End in
// Timezone; an End at or before Start ends the next day (22:00–06:00 crosses midnight).
type Window struct {
	Days     []time.Weekday `json:"-"`
	DayNames []string       `json:"days,omitempty"`
	Start    string         `json:"start"`
	End      string         `json:"end"`
	Timezone string         `json:"timezone,omitempty"`
	start    int            // minutes after midnight
	end      int
	loc      *time.Location
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

var weekdayNames = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// clock decodes "HH:MM" (24:00 allowed as an end: the end of the day).
func clock(s string, end bool) (int, bool) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || mm < 0 || mm > 59 || hh < 0 || hh > 24 || hh == 24 && (mm != 0 || !end) {
		return 0, false
	}
	return hh*60 + mm, true
}

func location(c *yamlnode.Checker, n *yaml.Node, at string) (string, *time.Location) {
	name := c.Str(n, at, true)
	if name == "" {
		return "", nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil || strings.EqualFold(name, "local") {
		c.Errf(n.Line, at, "unknown time zone %q: want an IANA name such as Europe/Berlin or UTC", name)
		return "", nil
	}
	return name, loc
}

// calendarFields are the drill file's calendar keys.
func calendarFields(c *yamlnode.Checker, cal *Calendar, lines map[string]int) yamlnode.Fields {
	return yamlnode.Fields{
		"timezone": func(n *yaml.Node, at string) { cal.Timezone, cal.loc = location(c, n, at) },
		"blocked_windows": func(n *yaml.Node, at string) {
			if n.Kind != yaml.SequenceNode {
				c.Errf(n.Line, at, "want a list of windows ({days: [sat, sun], start: \"22:00\", end: \"06:00\", timezone: Europe/Berlin}), got %s", yamlnode.KindName(n))
				return
			}
			for i, wn := range n.Content {
				cal.Windows = append(cal.Windows, window(c, wn, fmt.Sprintf("%s[%d]", at, i)))
			}
		},
		"blocked_dates": func(n *yaml.Node, at string) {
			for i, s := range c.StrList(n, at, "dates (YYYY-MM-DD)") {
				if _, err := time.Parse(time.DateOnly, s); err != nil {
					c.Errf(n.Content[i].Line, fmt.Sprintf("%s[%d]", at, i), "want a date such as 2026-12-24, got %q", s)
					continue
				}
				cal.Dates = append(cal.Dates, s)
			}
		},
		"blocking_conditions": func(n *yaml.Node, at string) {
			cal.Blocking = c.StrList(n, at, "stop condition names")
			cal.BlockingLine = n.Line
			lines[at] = n.Line
		},
	}
}

func window(c *yamlnode.Checker, n *yaml.Node, at string) Window {
	w := Window{}
	var startSeen, endSeen bool
	c.Mapping(n, at, false, yamlnode.Fields{
		"days": func(n *yaml.Node, at string) {
			for i, d := range c.StrList(n, at, "days (mon … sun)") {
				wd, ok := weekdays[strings.ToLower(d)]
				if !ok {
					c.Errf(n.Content[i].Line, fmt.Sprintf("%s[%d]", at, i), "unknown day %q (want one of %s)%s", d, strings.Join(weekdayNames, ", "), didYouMean(strings.ToLower(d), weekdayNames))
					continue
				}
				w.Days, w.DayNames = append(w.Days, wd), append(w.DayNames, strings.ToLower(d))
			}
		},
		"start": func(n *yaml.Node, at string) {
			startSeen = true
			w.Start = c.Str(n, at, true)
			var ok bool
			if w.start, ok = clock(w.Start, false); !ok && w.Start != "" {
				c.Errf(n.Line, at, "want a time of day such as \"22:00\" (quoted), got %q", w.Start)
			}
		},
		"end": func(n *yaml.Node, at string) {
			endSeen = true
			w.End = c.Str(n, at, true)
			var ok bool
			if w.end, ok = clock(w.End, true); !ok && w.End != "" {
				c.Errf(n.Line, at, "want a time of day such as \"06:00\" (quoted; 24:00 for the end of the day), got %q", w.End)
			}
		},
		"timezone": func(n *yaml.Node, at string) { w.Timezone, w.loc = location(c, n, at) },
	})
	if n.Kind == yaml.MappingNode {
		if !startSeen {
			c.Errf(n.Line, at+".start", "required (a time of day such as \"22:00\")")
		}
		if !endSeen {
			c.Errf(n.Line, at+".end", "required (a time of day such as \"06:00\")")
		}
		if startSeen && endSeen && w.Start != "" && w.Start == w.End {
			c.Errf(n.Line, at, "start and end are both %s: for a whole day give start: \"00:00\", end: \"24:00\"", w.Start)
		}
	}
	return w
}

// resolve gives each window without a time zone the calendar's (UTC by default).
func (cal *Calendar) resolve() {
	if cal.loc == nil {
		cal.loc = time.UTC
	}
	for i := range cal.Windows {
		if cal.Windows[i].loc == nil {
			cal.Windows[i].loc = cal.loc
		}
	}
}

// String says the window as the drill file does: "sat,sun 22:00–06:00 Europe/Berlin".
func (w Window) String() string {
	days := "every day"
	if len(w.DayNames) > 0 {
		days = strings.Join(w.DayNames, ",")
	}
	return fmt.Sprintf("%s %s–%s %s", days, w.Start, w.End, w.loc)
}

// contains reports whether t falls in the window: one that starts on a listed day (today's, or
// yesterday's when it crosses midnight).
func (w Window) contains(t time.Time) bool {
	lt := t.In(w.loc)
	m := lt.Hour()*60 + lt.Minute()
	on := func(d time.Weekday) bool { return len(w.Days) == 0 || slices.Contains(w.Days, d) }
	if w.end > w.start {
		return on(lt.Weekday()) && m >= w.start && m < w.end
	}
	// crosses midnight: from start today to end tomorrow
	return on(lt.Weekday()) && m >= w.start || on((lt.Weekday()+6)%7) && m < w.end
}

// Blocked says why t is inside a blocked window or on a blocked date ("" when it is not).
func (cal *Calendar) Blocked(t time.Time) string {
	cal.resolve()
	for _, w := range cal.Windows {
		if w.contains(t) {
			return fmt.Sprintf("inside the blocked window %s (it is %s there)", w, t.In(w.loc).Format("Mon 15:04"))
		}
	}
	day := t.In(cal.loc).Format(time.DateOnly)
	if slices.Contains(cal.Dates, day) {
		return fmt.Sprintf("%s is a blocked date (%s)", day, cal.loc)
	}
	return ""
}

// Skip is why a drill run now does not start: the calendar (a blocked window or date), or a
// blocking stop condition that fails now (evaluated once against the fleet's Prometheus; one
// that cannot be evaluated blocks too). "" when it may start.
func (r *Runner) Skip(ctx context.Context) (string, []failover.StopResult, error) {
	if why := r.Drill.Calendar.Blocked(r.now()); why != "" {
		return why, nil, nil
	}
	if len(r.Drill.Calendar.Blocking) == 0 {
		return "", nil, nil
	}
	c := &failover.StopChecker{Fleet: r.Fleet, Now: r.Now}
	var results []failover.StopResult
	for _, name := range r.Drill.Calendar.Blocking {
		cond := r.Fleet.StopCondition(name)
		if cond == nil {
			return "", nil, fmt.Errorf("blocking_conditions: %q is not a stop condition of %s", name, r.Fleet.File)
		}
		region := ""
		if cond.PerRegion {
			region = r.Drill.Lose // the region the drill loses is what a templated query is about
		}
		q, err := cond.ResolveQuery(region)
		var samples []failover.StopSample
		if err == nil {
			samples, err = c.Query(ctx, q)
		}
		res := failover.Judge(cond, samples, err)
		res.Region, res.Query, res.Time = region, q, r.now().UTC()
		results = append(results, res)
		if !res.Pass {
			return "blocking condition failing: " + res.String(), results, nil
		}
	}
	return "", results, ctx.Err()
}
