package drills

import (
	"strings"
	"testing"
	"time"
)

const calendarHead = "name: d\nfleet: fleet.yaml\nlose: eu-west-1\n"

func TestCalendarWindowsAndDates(t *testing.T) {
	d, err := Parse([]byte(calendarHead+`timezone: Europe/Berlin
blocked_windows:
  - {days: [sat, sun], start: "22:00", end: "06:00"}
  - {days: [mon], start: "09:00", end: "10:30", timezone: America/New_York}
blocked_dates: [2026-12-24]
blocking_conditions: [eu-error-ratio]
`), "drill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	ny, _ := time.LoadLocation("America/New_York")
	for _, c := range []struct {
		at   time.Time
		want string // "" not blocked
	}{
		{time.Date(2026, 12, 5, 23, 10, 0, 0, berlin), "inside the blocked window sat,sun 22:00–06:00 Europe/Berlin (it is Sat 23:10 there)"},
		{time.Date(2026, 12, 6, 5, 59, 0, 0, berlin), "sat,sun 22:00–06:00"},          // Sunday morning: Saturday's window
		{time.Date(2026, 12, 7, 5, 0, 0, 0, berlin), "sat,sun 22:00–06:00"},           // Monday morning: Sunday's window
		{time.Date(2026, 12, 7, 6, 0, 0, 0, berlin), ""},                              // the window ends at 06:00
		{time.Date(2026, 12, 5, 21, 59, 0, 0, berlin), ""},                            // Saturday before it starts
		{time.Date(2026, 12, 4, 23, 0, 0, 0, berlin), ""},                             // Friday night: not a listed day
		{time.Date(2026, 12, 7, 9, 30, 0, 0, ny), "mon 09:00–10:30 America/New_York"}, // its own time zone
		{time.Date(2026, 12, 7, 9, 30, 0, 0, berlin), ""},
		{time.Date(2026, 12, 24, 12, 0, 0, 0, berlin), "2026-12-24 is a blocked date (Europe/Berlin)"},
		{time.Date(2026, 12, 23, 23, 30, 0, 0, time.UTC), "2026-12-24 is a blocked date"}, // already the 24th in Berlin
		{time.Date(2026, 12, 25, 0, 30, 0, 0, berlin), ""},
	} {
		got := d.Calendar.Blocked(c.at)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.at, got, c.want)
		}
	}
	if len(d.Calendar.Blocking) != 1 || d.Calendar.Blocking[0] != "eu-error-ratio" {
		t.Errorf("blocking %v", d.Calendar.Blocking)
	}
	all, err := Parse([]byte(calendarHead+"blocked_windows: [{start: \"00:00\", end: \"24:00\"}]\n"), "drill.yaml")
	if err != nil || !strings.Contains(all.Calendar.Blocked(time.Now()), "every day 00:00–24:00 UTC") {
		t.Fatalf("a whole-day window every day: %v %+v", err, all)
	}
}

func TestCalendarErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"timezone: Mars/Olympus\n", "drill.yaml:4: timezone: unknown time zone \"Mars/Olympus\""},
		{"blocked_windows: [{days: [saturday], start: \"22:00\", end: \"06:00\"}]\n", "blocked_windows[0].days[0]: unknown day \"saturday\""},
		{"blocked_windows: [{start: \"25:00\", end: \"06:00\"}]\n", "blocked_windows[0].start: want a time of day"},
		{"blocked_windows: [{start: \"22:00\"}]\n", "blocked_windows[0].end: required"},
		{"blocked_windows: [{start: \"22:00\", end: \"22:00\"}]\n", "start and end are both 22:00"},
		{"blocked_windows: [{start: \"22:00\", end: \"06:00\", zone: UTC}]\n", "blocked_windows[0].zone: unknown key"},
		{"blocked_dates: [2026-13-01]\n", "blocked_dates[0]: want a date such as 2026-12-24"},
		{"blocked_dates: 2026-12-24\n", "blocked_dates: want a list"},
	} {
		_, err := Parse([]byte(calendarHead+c.yaml), "drill.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.yaml, err, c.want)
		}
	}
}
