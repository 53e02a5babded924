// The streamed generation: one request per served name and adapter, read as server-sent events
// to [DONE] under the stall and size caps, judged for tokens, rate and the TTFT budget.

package warm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// streamed is one streamed request's outcome: its TTFT and decode rate, or the verdict and
// message of its failure (v != "").
type streamed struct {
	ttft   time.Duration
	rate   float64
	tokens int
	v      Verdict
	msg    string
	spent  bool // it failed by using up its deadline or a size cap (a stall, a stream without end)
}

// once sends one streamed request and reads it to [DONE] under the request and stall deadlines.
func (p *prober) once(ctx context.Context, model string) streamed {
	path, body := p.generateRequest(model)
	ctx, cancel := context.WithTimeout(ctx, p.o.RequestTimeout)
	defer cancel()
	st := &stream{o: p.o}
	st.watchdog = time.AfterFunc(p.o.StallTimeout, func() { st.stalled.Store(true); cancel() })
	defer st.watchdog.Stop()

	resp, v, msg := p.openStream(ctx, path, body, st)
	if resp == nil {
		return streamed{v: v, msg: msg, spent: ctx.Err() != nil}
	}
	defer resp.Body.Close()
	if v, msg, ok := st.read(ctx, resp.Body, p.streamErr); !ok {
		return streamed{v: v, msg: msg, spent: ctx.Err() != nil || st.capped}
	}
	return st.judge()
}

// generateN sends o.Requests streamed requests to model, one after another, and records one
// check: every request must stream to [DONE] with content. A share of failures is reported as
// counted (failed of sent, the rate) with the worst failure's verdict; the median TTFT is held
// to the budget and is the result's ttft_s.
func (p *prober) generateN(ctx context.Context, model string) bool {
	path, _ := p.generateRequest(model)
	name := "generate " + path
	var ok []streamed
	var worst *streamed
	for i := 0; i < p.o.Requests; i++ {
		r := p.once(ctx, model)
		p.res.Requests.Sent++
		if r.v != "" {
			p.res.Requests.Failed++
			if worst == nil || rank(r.v) < rank(worst.v) {
				worst = &r
			}
		} else {
			ok = append(ok, r)
		}
		if p.exited() || ctx.Err() != nil || r.spent {
			// Nothing more to learn from a process that is gone or a spent budget; and a
			// request that held its whole deadline already says not WARM, where seven more
			// would only make the verdict wait seven deadlines.
			break
		}
	}
	sent, failed := p.res.Requests.Sent, p.res.Requests.Failed
	rate := float64(failed) / float64(sent)
	p.res.Requests.FailureRate = &rate
	if worst != nil {
		return p.check(name, false, worst.v, "%d of %d requests failed (%.0f %%); %s", failed, sent, rate*100, worst.msg)
	}
	slices.SortFunc(ok, func(a, b streamed) int { return cmp.Compare(a.ttft, b.ttft) })
	med := ok[len(ok)/2]
	rates := make([]float64, len(ok))
	for i, r := range ok {
		rates[i] = r.rate
	}
	slices.Sort(rates)
	tps := rates[len(rates)/2]
	p.check(name, true, "", "%d of %d requests streamed to [DONE] (%d tokens each); ttft median %s, max %s; %.1f tokens/s",
		len(ok), sent, med.tokens, med.ttft.Round(time.Millisecond), ok[len(ok)-1].ttft.Round(time.Millisecond), tps)
	p.res.Timings.TTFTS = secs(med.ttft)
	p.res.Timings.TokensPerS = &tps
	if p.o.TTFTBudget > 0 {
		p.check("ttft "+model, med.ttft <= p.o.TTFTBudget, Slow, "median %s of %d requests (budget %s)", med.ttft.Round(time.Millisecond), len(ok), p.o.TTFTBudget)
	}
	return true
}

// generateOne sends one streamed request to an adapter and records its check.
func (p *prober) generateOne(ctx context.Context, name, model string) bool {
	path, _ := p.generateRequest(model)
	name += " " + path
	r := p.once(ctx, model)
	if r.v != "" {
		return p.check(name, false, r.v, "%s", r.msg)
	}
	p.check(name, true, "", "%d tokens, [DONE], ttft %s, %.1f tokens/s", r.tokens, r.ttft.Round(time.Millisecond), r.rate)
	if p.o.TTFTBudget > 0 {
		p.check("ttft "+model, r.ttft <= p.o.TTFTBudget, Slow, "%s (budget %s)", r.ttft.Round(time.Millisecond), p.o.TTFTBudget)
	}
	return true
}

// rank is v's place in verdictRank (earlier names the verdict).
func rank(v Verdict) int {
	if i := slices.Index(verdictRank, v); i >= 0 {
		return i
	}
	return len(verdictRank)
}

// generateRequest is the path and JSON body of the probe's streamed request.
func (p *prober) generateRequest(model string) (string, []byte) {
	path := "/v1/chat/completions"
	req := map[string]any{"model": model, "max_tokens": p.o.MaxTokens, "stream": true,
		"temperature": 0, "stream_options": map[string]any{"include_usage": true}}
	if p.o.CompletionsOnly {
		path = "/v1/completions"
		req["prompt"] = p.o.Prompt
	} else {
		req["messages"] = []map[string]string{{"role": "user", "content": p.o.Prompt}}
	}
	body, _ := json.Marshal(req)
	return path, body
}

// openStream posts the request and checks that an event stream came back; on failure the
// response is nil and the verdict and message say why.
func (p *prober) openStream(ctx context.Context, path string, body []byte, st *stream) (*http.Response, Verdict, string) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, ChatFailed, err.Error()
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	p.authorize(hreq)
	st.sent = time.Now()
	resp, err := p.o.HTTPClient.Do(hreq)
	if err != nil {
		if v, what := connVerdict(err); v != "" {
			return nil, v, fmt.Sprintf("no response: %s", what)
		}
		return nil, ChatFailed, p.streamErr(err, &st.stalled, ctx, "no response")
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		msg, typ := apiErrorMessage(b)
		if isAuthStatus(resp.StatusCode) {
			return nil, AuthFailed, p.authMessage(resp.StatusCode, msg)
		}
		return nil, errorVerdict(typ), fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, ChatFailed, fmt.Sprintf("HTTP 200 with Content-Type %q, not an event stream: %s", ct, snippet(b))
	}
	return resp, "", ""
}

func errorVerdict(typ string) Verdict {
	if typ == "EngineDeadError" {
		return EngineDead
	}
	return ChatFailed
}

// stream is what one streamed answer delivered.
type stream struct {
	o        ProbeOptions
	watchdog *time.Timer
	stalled  atomic.Bool
	capped   bool // a size cap ended it

	sent, firstAt, lastAt time.Time
	ttft                  time.Duration
	tokens, chunks        int
	usageTokens           int
}

// read consumes server-sent events to [DONE]. The stall watchdog is reset by bytes arriving,
// not by lines completing, and no line or stream may outgrow its cap.
func (st *stream) read(ctx context.Context, body io.Reader, streamErr func(error, *atomic.Bool, context.Context, string) string) (Verdict, string, bool) {
	counted := &countingReader{r: io.LimitReader(body, MaxStreamBytes+1), touch: func() { st.watchdog.Reset(st.o.StallTimeout) }}
	r := bufio.NewReaderSize(counted, 64<<10)
	for {
		line, err := readLine(r)
		if errors.Is(err, errTooLarge) {
			st.capped = true
			return ChatFailed, fmt.Sprintf("event stream line longer than %d bytes (%d chunks, %d tokens)", MaxSSELineBytes, st.chunks, st.tokens), false
		}
		if counted.n > MaxStreamBytes {
			st.capped = true
			return ChatFailed, fmt.Sprintf("event stream larger than %d bytes without [DONE] (%d chunks, %d tokens)", MaxStreamBytes, st.chunks, st.tokens), false
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return ChatFailed, fmt.Sprintf("stream ended before [DONE] (%d chunks, %d tokens)", st.chunks, st.tokens), false
			}
			return ChatFailed, fmt.Sprintf("%s (%d chunks, %d tokens)", streamErr(err, &st.stalled, ctx, "stream broke before [DONE]"), st.chunks, st.tokens), false
		}
		switch {
		case line == "" || strings.HasPrefix(line, ":"):
			continue // event separator or comment
		case strings.HasPrefix(line, "event:") || strings.HasPrefix(line, "id:") || strings.HasPrefix(line, "retry:"):
			continue
		case !strings.HasPrefix(line, "data:"):
			return ChatFailed, fmt.Sprintf("not server-sent events: %q", snippet([]byte(line))), false
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			return "", "", true
		}
		if v, msg, ok := st.chunk(data); !ok {
			return v, msg, false
		}
	}
}

// readLine returns the next line without its line ending; a line over MaxSSELineBytes is
// errTooLarge, and a last line without a newline is the read error (io.EOF for a clean end).
func readLine(r *bufio.Reader) (string, error) {
	var buf []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(buf)+len(frag) > MaxSSELineBytes {
			return "", errTooLarge
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			return strings.TrimRight(string(buf), "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return "", err
		}
	}
}

// chunk takes one data: payload: an error frame fails, content counts as tokens.
func (st *stream) chunk(data string) (Verdict, string, bool) {
	st.chunks++
	var chunk struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Text  *string `json:"text"`
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(data), &chunk); err != nil {
		return ChatFailed, fmt.Sprintf("garbage in the event stream (chunk %d): %q", st.chunks, snippet([]byte(data))), false
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		msg, typ := apiErrorMessage([]byte(data))
		return errorVerdict(typ), fmt.Sprintf("error frame after %d tokens: %s", st.tokens, msg), false
	}
	if chunk.Usage != nil {
		st.usageTokens = chunk.Usage.CompletionTokens
	}
	for _, c := range chunk.Choices {
		s := c.Delta.Content
		if c.Text != nil {
			s = c.Text
		}
		if s != nil && *s != "" {
			now := time.Now()
			if st.tokens == 0 {
				st.firstAt, st.ttft = now, now.Sub(st.sent)
			}
			st.lastAt = now
			st.tokens++
		}
	}
	return "", "", true
}

// judge measures a complete stream: tokens and rate; a stream without content failed.
func (st *stream) judge() streamed {
	if st.tokens == 0 {
		return streamed{v: ChatFailed, msg: fmt.Sprintf("[DONE] without any content (%d chunks)", st.chunks)}
	}
	n := st.tokens
	if st.usageTokens > 0 {
		n = st.usageTokens
	}
	var rate float64
	if span := st.lastAt.Sub(st.firstAt); n > 1 && span > 0 {
		rate = float64(n-1) / span.Seconds()
	} else {
		rate = float64(n) / st.lastAt.Sub(st.sent).Seconds()
	}
	return streamed{ttft: st.ttft, rate: rate, tokens: n}
}

// countingReader counts the bytes read through it and calls touch whenever some arrive.
type countingReader struct {
	r     io.Reader
	n     int64
	touch func()
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.n += int64(n)
		c.touch()
	}
	return n, err
}

func (p *prober) streamErr(err error, stalled *atomic.Bool, ctx context.Context, what string) string {
	switch {
	case stalled.Load():
		return fmt.Sprintf("%s: stalled, nothing for %s", what, p.o.StallTimeout)
	case budgetSpent(ctx) != nil:
		return fmt.Sprintf("%s: %v", what, budgetSpent(ctx))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("%s: no [DONE] within %s", what, p.o.RequestTimeout)
	default:
		return fmt.Sprintf("%s: %v", what, err)
	}
}
