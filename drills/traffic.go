package drills

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/providers"
)

// maxSamples bounds the requests the background sampler sends in one drill.
const maxSamples = 2000

// maxResponseBytes bounds one synthetic response.
const maxResponseBytes = 1 << 20

func (x *run) client() *http.Client {
	if x.HTTPClient != nil {
		return x.HTTPClient
	}
	// A router or replica is a peer, not a friend: its headers are bounded as its bodies are.
	return &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4, MaxResponseHeaderBytes: 64 << 10}}
}

// pick chooses where a class's next request lands, as the router's weights say (smooth
// weighted round robin over the regions in state ready): the serving path of the file router,
// whose data plane is the receivers' endpoints.
type picker struct {
	mu      sync.Mutex
	current map[string]map[string]int
}

func (p *picker) pick(class string, rs router.RouterState) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == nil {
		p.current = map[string]map[string]int{}
	}
	if p.current[class] == nil {
		p.current[class] = map[string]int{}
	}
	cur := p.current[class]
	total, best := 0, ""
	for _, region := range slices.Sorted(mapsKeys(rs.Weights[class])) {
		w := rs.Weights[class][region]
		if w <= 0 || rs.States.Get(class, region) != router.Ready {
			continue
		}
		cur[region] += w
		total += w
		if best == "" || cur[region] > cur[best] {
			best = region
		}
	}
	if best != "" {
		cur[best] -= total
	}
	return best
}

// send sends one synthetic request of class along its serving path: through the router's
// frontend for the class when the fleet names one (the router picks the region and says which
// in its X-Served-By header), else straight to the receiver the router's weights pick.
func (x *run) send(ctx context.Context, p *picker, class, phase string) Request {
	t0 := x.now()
	req := Request{Offset: t0.Sub(x.start).Seconds(), Phase: phase, Class: class}
	if fe := x.Fleet.Router.Frontends[class]; fe != "" {
		req.Via = fe
		ttft, servedBy, err := x.complete(ctx, fe)
		req.Region = x.regionServing(servedBy)
		req.Eligible = req.Region != "" && slices.Contains(x.Fleet.Tenants[class], req.Region)
		switch {
		case err != nil:
			req.Error = err.Error()
		case req.Region == "":
			req.Error = fmt.Sprintf("the router's %s header %q names no region of the fleet (want a region, or a candidate's host:port)", fleet.FrontendServedBy, providers.Sanitize(servedBy, 200))
		default:
			req.OK, req.TTFTMS = true, float64(ttft.Microseconds())/1000
		}
		return req
	}
	rs, err := x.base.Read(ctx)
	if err != nil {
		req.Error = fmt.Sprintf("read the router: %v", err)
		return req
	}
	region := p.pick(class, rs)
	req.Region = region
	req.Eligible = region != "" && slices.Contains(x.Fleet.Tenants[class], region)
	if region == "" {
		req.Error = "the router sends this class nowhere"
		return req
	}
	ep := ""
	if r := x.exFl.Regions[region]; r != nil {
		ep = r.Endpoint
	}
	if ep == "" {
		req.Error = fmt.Sprintf("%s has no serving endpoint", region)
		return req
	}
	ttft, _, err := x.complete(ctx, ep)
	if err != nil {
		req.Error = err.Error()
		return req
	}
	req.OK, req.TTFTMS = true, float64(ttft.Microseconds())/1000
	return req
}

// regionServing maps a router's X-Served-By value to a region: a region's name (HAProxy's
// server name), or the host:port of a region's serving endpoint (an upstream address); "" when
// it is neither.
func (x *run) regionServing(servedBy string) string {
	if servedBy == "" {
		return ""
	}
	if x.Fleet.Regions[servedBy] != nil {
		return servedBy
	}
	for _, name := range x.exFl.RegionNames() {
		ep := x.exFl.Regions[name].Endpoint
		if u, err := url.Parse(ep); err == nil && ep != "" && u.Host == servedBy {
			return name
		}
	}
	return ""
}

// complete streams one completion and returns the time to its first token and the response's
// X-Served-By header (where a router sent it).
func (x *run) complete(ctx context.Context, endpoint string) (time.Duration, string, error) {
	ctx, cancel := context.WithTimeout(ctx, x.Drill.Traffic.Timeout)
	defer cancel()
	model := ""
	if len(x.models) > 0 {
		model = x.models[0]
	}
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": x.Drill.Traffic.Prompt, "max_tokens": x.Drill.Traffic.MaxTokens, "stream": true})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := x.client().Do(hr)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	servedBy := strings.TrimSpace(resp.Header.Get(fleet.FrontendServedBy))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, servedBy, fmt.Errorf("HTTP %d: %s", resp.StatusCode, providers.Sanitize(string(b), 200))
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxResponseBytes))
	var ttft time.Duration
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			if ttft == 0 {
				return 0, servedBy, errors.New("the stream ended without a token")
			}
			return ttft, servedBy, nil
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return 0, servedBy, fmt.Errorf("not a completion chunk: %v", err)
		}
		if chunk.Error != nil {
			return 0, servedBy, fmt.Errorf("error frame: %s", providers.Sanitize(chunk.Error.Message, 200))
		}
		if ttft == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Text != "" {
			ttft = time.Since(t0)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, "", err
	}
	return 0, servedBy, errors.New("the stream ended before [DONE]")
}

func (x *run) record(r Request) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.requests = append(x.requests, r)
}

// startSampler sends one request per class at once and then every traffic.interval until the
// failback ends: TTFT and landing region over the whole ramp.
func (x *run) startSampler() {
	if x.Drill.Traffic.Interval <= 0 || x.sampler != nil {
		return
	}
	ctx, cancel := context.WithCancel(x.ctx)
	x.sampler, x.sampled = cancel, make(chan struct{})
	p := &picker{}
	go func() {
		defer close(x.sampled)
		classes := slices.Sorted(mapsKeys(x.Fleet.Tenants))
		// The first round goes out at once and runs to its end even when the ramp ends first
		// (each request bounded by traffic.timeout): a ramp that fails in a few hundred
		// milliseconds still leaves one sample per class in the evidence, not none.
		for _, c := range classes {
			r := x.send(x.ctx, p, c, "ramp")
			if x.ctx.Err() != nil {
				return // the drill itself was cancelled
			}
			x.record(r)
		}
		t := time.NewTicker(x.Drill.Traffic.Interval)
		defer t.Stop()
		sent := len(classes)
		for sent < maxSamples {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, c := range classes {
				r := x.send(ctx, p, c, "ramp")
				if ctx.Err() != nil {
					return // cut off by the end of the sampling, not a failure
				}
				x.record(r)
				sent++
			}
		}
	}()
}

func (x *run) stopSampler() {
	if x.sampler == nil {
		return
	}
	x.sampler()
	<-x.sampled
	x.sampler = nil
}

// traffic sends traffic.requests synthetic requests per class (4 in flight) and fails on any
// request that failed, landed outside its class's eligible regions, or landed on a region the
// router gives that class no weight (through a router's frontend, its data plane must follow
// the weights its control plane reads back).
func (x *run) traffic() (string, error) {
	rs, err := x.base.Read(x.ctx)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", x.base, err)
	}
	classes := slices.Sorted(mapsKeys(x.Fleet.Tenants))
	all := x.sendTraffic(classes)
	var parts, problems []string
	for _, c := range classes {
		n, bad, out := 0, 0, 0
		where, unweighted := map[string]int{}, map[string]int{}
		for _, r := range all {
			if r.Class != c {
				continue
			}
			n++
			if !r.OK {
				bad++
			}
			if r.Region != "" && !r.Eligible {
				out++
			}
			if r.Region != "" && (rs.Weights[c][r.Region] == 0 || rs.States.Get(c, r.Region) != router.Ready) {
				unweighted[r.Region]++
			}
			where[r.Region]++
		}
		parts = append(parts, fmt.Sprintf("%s: %d request(s) → %s", c, n, regionCounts(where)))
		if bad > 0 {
			problems = append(problems, fmt.Sprintf("%d %s request(s) failed", bad, c))
		}
		if out > 0 {
			problems = append(problems, fmt.Sprintf("%d %s request(s) landed outside %v", out, c, x.Fleet.Tenants[c]))
		}
		if len(unweighted) > 0 {
			problems = append(problems, fmt.Sprintf("%s request(s) landed where the router gives %s no weight: %s", c, c, regionCounts(unweighted)))
		}
	}
	detail := strings.Join(parts, "; ")
	if len(x.Fleet.Router.Frontends) > 0 {
		detail = "through the router's frontends: " + detail
	}
	if len(problems) > 0 {
		return detail, errors.New(strings.Join(problems, "; "))
	}
	return detail, nil
}

// sendTraffic sends traffic.requests requests per class, 4 in flight, and returns them all.
func (x *run) sendTraffic(classes []string) []Request {
	x.ensureExecutorFleet()
	p := &picker{}
	var all []Request
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, c := range classes {
		for range x.Drill.Traffic.Requests {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-x.ctx.Done():
					return
				}
				defer func() { <-sem }()
				r := x.send(x.ctx, p, c, "traffic")
				mu.Lock()
				all = append(all, r)
				mu.Unlock()
				x.record(r)
			}()
		}
	}
	wg.Wait()
	return all
}

func regionCounts(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(mapsKeys(m)) {
		name := k
		if name == "" {
			name = "nowhere"
		}
		out = append(out, fmt.Sprintf("%s %d", name, m[k]))
	}
	return strings.Join(out, ", ")
}

// classTraffic sums the requests per class.
func (x *run) classTraffic() []ClassTraffic {
	var out []ClassTraffic
	for _, c := range slices.Sorted(mapsKeys(x.Fleet.Tenants)) {
		ct := ClassTraffic{Class: c, Eligible: slices.Clone(x.Fleet.Tenants[c]), ByRegion: map[string]int{}}
		var ttfts []float64
		for _, r := range x.rep.Requests {
			if r.Class != c {
				continue
			}
			ct.Requests++
			if !r.OK {
				ct.Failed++
			} else {
				ttfts = append(ttfts, r.TTFTMS)
			}
			if r.Region != "" {
				ct.ByRegion[r.Region]++
				if !r.Eligible {
					ct.Outside++
				}
			}
		}
		if len(ttfts) > 0 {
			sort.Float64s(ttfts)
			ct.TTFTP50MS, ct.TTFTMaxMS = ttfts[len(ttfts)/2], ttfts[len(ttfts)-1]
		}
		out = append(out, ct)
	}
	return out
}
