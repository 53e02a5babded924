package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"lifeboat/internal/base/wait"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// Formats of a webhook's body.
const (
	FormatSlack = "slack" // {"text": …, "blocks": […]}: Slack incoming webhooks and the many that accept them
	FormatJSON  = "json"  // Event itself
)

// Event kinds.
const (
	KindStart   = "failover.start"   // a failover run began changing the router
	KindHold    = "failover.hold"    // a run stopped held: a check failed between steps
	KindRefused = "failover.refused" // a run was refused: nothing changed
	KindDone    = "failover.done"    // a run reached the end of its plan
	KindFailed  = "failover.failed"  // a run stopped on an error
	KindDrill   = "drill.verdict"    // a drill's verdict, PASS or FAIL
)

// Kinds are every event kind, in the order the docs list them.
var Kinds = []string{KindStart, KindHold, KindRefused, KindDone, KindFailed, KindDrill}

// Defaults and bounds.
const (
	DefaultTimeout = 5 * time.Second  // one attempt
	MaxTimeout     = 30 * time.Second // the most `timeout:` may say
	Attempts       = 3                // per event and webhook: the first and two retries
	FirstBackoff   = 250 * time.Millisecond
	QueueSize      = 32              // events waiting per webhook
	MaxBody        = 16 << 10        // a body is at most this many bytes (fields are cut to fit)
	MaxResponse    = 4 << 10         // read (and dropped) of a receiver's answer
	FlushDeadline  = 3 * time.Second // Close waits at most this long for queued events
	maxURLBytes    = 4 << 10         // of a url_file
	maxField       = 1000            // runes of one free-text field
)

// Webhook is one entry of a fleet's `notify:` list.
type Webhook struct {
	Name    string        `json:"name,omitempty"`    // how logs name it ("" : notify[i])
	URLEnv  string        `json:"url_env,omitempty"` // the environment variable holding the URL
	URLFile string        `json:"url_file,omitempty"`
	Format  string        `json:"format"`
	Events  []string      `json:"events,omitempty"` // empty: every kind
	Timeout time.Duration `json:"timeout,omitempty"`
	Line    int           `json:"-"`
}

// Label is how logs and errors name the webhook: never by its URL.
func (w Webhook) Label(i int) string {
	if w.Name != "" {
		return w.Name
	}
	return fmt.Sprintf("notify[%d]", i)
}

// Wants reports whether the webhook takes events of this kind.
func (w Webhook) Wants(kind string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, k := range w.Events {
		if k == kind || strings.TrimSuffix(kind, ".verdict") == k || strings.TrimPrefix(kind, "failover.") == k {
			return true
		}
	}
	return false
}

// Event is one notification; with format json it is the body, as is.
type Event struct {
	Schema    string    `json:"schema"` // "lifeboat.notification/v1"
	Event     string    `json:"event"`  // a Kind
	Time      time.Time `json:"time"`
	Fleet     string    `json:"fleet"` // the fleet file, as given
	Model     string    `json:"model,omitempty"`
	Run       string    `json:"run,omitempty"`       // the failover run id, or the drill's name
	Operation string    `json:"operation,omitempty"` // "evacuate eu-west-1", "restore eu-west-1", "spill"
	Regions   []string  `json:"regions,omitempty"`
	Classes   []string  `json:"classes,omitempty"`
	Verdict   string    `json:"verdict"` // started, held, refused, done, failed, PASS, FAIL
	Reason    string    `json:"reason,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Holder    string    `json:"holder,omitempty"`
	Next      string    `json:"next,omitempty"` // the command to run next, pasteable
}

// Schema is Event's schema name.
const Schema = "lifeboat.notification/v1"

// Stats count what happened to the notifications of one Notifier.
type Stats struct {
	Delivered, Retried, Failed, Dropped int64
}

// Notifier delivers events to a fleet's webhooks. The zero Notifier and a nil one send nothing.
type Notifier struct {
	log    *slog.Logger
	hooks  []*hook
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	delivered, retried, failed, dropped atomic.Int64
}

type hook struct {
	label  string
	url    string // secret
	w      Webhook
	queue  chan Event
	client *http.Client
}

// New starts a Notifier for the webhooks. A webhook whose URL cannot be read (the variable unset,
// the file unreadable) is skipped with a warning: a notification never stops a failover.
func New(hooks []Webhook, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{log: log, ctx: ctx, cancel: cancel}
	for i, w := range hooks {
		label := w.Label(i)
		u, err := resolveURL(w)
		if err != nil {
			log.Warn("notification webhook skipped", "webhook", label, "err", err.Error())
			continue
		}
		timeout := w.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		h := &hook{label: label, url: u, w: w, queue: make(chan Event, QueueSize),
			client: &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		n.hooks = append(n.hooks, h)
		n.wg.Add(1)
		go n.serve(h)
	}
	return n
}

// resolveURL reads the webhook's URL from its variable or file, and checks it is http(s).
func resolveURL(w Webhook) (string, error) {
	var u string
	switch {
	case w.URLEnv != "":
		v, ok := os.LookupEnv(w.URLEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("url_env %s is not set", w.URLEnv)
		}
		u = v
	case w.URLFile != "":
		b, err := localfile.ReadFile(w.URLFile, maxURLBytes)
		if err != nil {
			return "", fmt.Errorf("url_file %s: %v", w.URLFile, errors.Unwrap(err))
		}
		u = string(b)
	default:
		return "", errors.New("no url_env or url_file")
	}
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", errors.New("the URL is not an http:// or https:// URL (not shown: a webhook URL is a secret)")
	}
	return u, nil
}

// Send queues the event for every webhook that wants it, and returns at once.
func (n *Notifier) Send(ev Event) {
	if n == nil || n.closed.Load() {
		return
	}
	if ev.Schema == "" {
		ev.Schema = Schema
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	for _, h := range n.hooks {
		if !h.w.Wants(ev.Event) {
			continue
		}
		select {
		case h.queue <- ev:
		default:
			n.dropped.Add(1)
			n.log.Warn("notification dropped: the webhook's queue is full (its receiver is slow or down)", "webhook", h.label, "event", ev.Event)
		}
	}
}

// Close stops taking events and waits until every queued one is delivered or given up, or the
// deadline passes (then what is left is dropped, with a warning). It returns the stats.
func (n *Notifier) Close(deadline time.Duration) Stats {
	if n == nil {
		return Stats{}
	}
	if n.closed.CompareAndSwap(false, true) {
		for _, h := range n.hooks {
			close(h.queue)
		}
	}
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	t := time.NewTimer(deadline)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		n.cancel()
		<-done
	}
	n.cancel()
	return n.Stats()
}

// Stats are the counts so far.
func (n *Notifier) Stats() Stats {
	if n == nil {
		return Stats{}
	}
	return Stats{Delivered: n.delivered.Load(), Retried: n.retried.Load(), Failed: n.failed.Load(), Dropped: n.dropped.Load()}
}

func (n *Notifier) serve(h *hook) {
	defer n.wg.Done()
	for ev := range h.queue {
		if n.ctx.Err() != nil {
			n.dropped.Add(1)
			n.log.Warn("notification not delivered: the flush deadline passed", "webhook", h.label, "event", ev.Event)
			continue
		}
		n.deliver(h, ev)
	}
}

// deliver posts one event, retrying network errors, 429 and 5xx with backoff.
func (n *Notifier) deliver(h *hook, ev Event) {
	body, err := Body(h.w.Format, ev)
	if err != nil {
		n.failed.Add(1)
		n.log.Warn("notification not delivered", "webhook", h.label, "event", ev.Event, "err", err.Error())
		return
	}
	backoff := FirstBackoff
	var last string
	for attempt := 1; attempt <= Attempts; attempt++ {
		if attempt > 1 {
			n.retried.Add(1)
			if wait.Sleep(n.ctx, backoff) != nil {
				n.failed.Add(1)
				n.log.Warn("notification not delivered: the flush deadline passed", "webhook", h.label, "event", ev.Event, "attempts", attempt-1, "last", last)
				return
			}
			backoff *= 2
		}
		retry, msg := h.post(n.ctx, body)
		if msg == "" {
			n.delivered.Add(1)
			n.log.Debug("notification delivered", "webhook", h.label, "event", ev.Event, "attempts", attempt)
			return
		}
		last = msg
		if !retry {
			break
		}
	}
	n.failed.Add(1)
	n.log.Warn("notification not delivered (the run goes on)", "webhook", h.label, "event", ev.Event, "attempts", Attempts, "last", last)
}

// post sends the body once: "" when the receiver took it (2xx), else what went wrong (never the
// URL) and whether another attempt may help.
func (h *hook) post(ctx context.Context, body []byte) (retry bool, msg string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return false, "the request could not be made"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lifeboat-notify/1")
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error's text carries the URL
		}
		return true, h.scrub(err.Error())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponse))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, ""
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return false, fmt.Sprintf("HTTP %d", resp.StatusCode)
}

// scrub removes the URL and its parts from a message, then redacts what looks like a secret.
func (h *hook) scrub(s string) string {
	s = strings.ReplaceAll(s, h.url, "<webhook>")
	if p, err := url.Parse(h.url); err == nil {
		if p.Path != "" && p.Path != "/" {
			s = strings.ReplaceAll(s, p.Path, "/<path>")
		}
		if p.RawQuery != "" {
			s = strings.ReplaceAll(s, p.RawQuery, "<query>")
		}
	}
	return providers.Sanitize(s, 300)
}

// Body renders the event in the format, within MaxBody: free-text fields are sanitised (a peer's
// text, redacted) and cut, then cut harder until the body fits.
func Body(format string, ev Event) ([]byte, error) {
	limit := maxField
	for range 6 {
		e := ev
		e.Reason, e.Detail, e.Holder = clean(e.Reason, limit), clean(e.Detail, limit), clean(e.Holder, 200)
		e.Next = clean(e.Next, 500)
		var v any = e
		if format == FormatSlack {
			v = slackBody(e)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if len(b) <= MaxBody {
			return b, nil
		}
		limit /= 2
		if len(ev.Regions) > 20 {
			ev.Regions = ev.Regions[:20]
		}
		if len(ev.Classes) > 20 {
			ev.Classes = ev.Classes[:20]
		}
	}
	return nil, fmt.Errorf("the %s notification does not fit in %d bytes", ev.Event, MaxBody)
}

func clean(s string, max int) string {
	if s == "" {
		return ""
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return providers.Sanitize(s, max)
}

// slackBody is the event as a Slack message: text for notifications and old clients, blocks for
// the channel.
func slackBody(e Event) map[string]any {
	icon := map[string]string{KindStart: ":arrows_counterclockwise:", KindHold: ":double_vertical_bar:", KindRefused: ":no_entry:",
		KindDone: ":white_check_mark:", KindFailed: ":x:"}[e.Event]
	if e.Event == KindDrill {
		icon = ":white_check_mark:"
		if e.Verdict != "PASS" {
			icon = ":x:"
		}
	}
	title := fmt.Sprintf("%s Lifeboat %s: %s", icon, e.Event, strings.ToUpper(e.Verdict))
	if e.Operation != "" {
		title += " — " + e.Operation
	}
	var lines []string
	add := func(k, v string) {
		if v != "" {
			lines = append(lines, fmt.Sprintf("*%s:* %s", k, slackEscape(v)))
		}
	}
	add("Fleet", e.Fleet)
	add("Model", e.Model)
	add("Run", e.Run)
	add("Regions", strings.Join(e.Regions, ", "))
	add("Classes", strings.Join(e.Classes, ", "))
	add("Reason", e.Reason)
	add("Detail", e.Detail)
	add("By", e.Holder)
	blocks := []any{
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": slackEscape(title)}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": strings.Join(lines, "\n")}},
	}
	if e.Next != "" {
		blocks = append(blocks, map[string]any{"type": "context", "elements": []any{
			map[string]any{"type": "mrkdwn", "text": "Next: `" + strings.ReplaceAll(slackEscape(e.Next), "`", "'") + "`"}}})
	}
	text := title
	if e.Detail != "" {
		text += ": " + e.Detail
	}
	return map[string]any{"text": slackEscape(text), "blocks": blocks}
}

// slackEscape escapes what Slack's mrkdwn reads as control (&, <, >).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
