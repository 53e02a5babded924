package route53

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"lifeboat/fleet/router"
	"lifeboat/internal/base/wait"
)

// MaxWeight is Route 53's largest weight.
const MaxWeight = 255

// Config configures the driver.
type Config struct {
	HostedZoneID string
	// Records is, per class, the DNS name of its weighted record sets.
	Records map[string]string
	// SetIdentifiers is, per region, its records' SetIdentifier when it is not the region's name.
	SetIdentifiers map[string]string
	// Classes is each class's eligible regions; Regions every region of the fleet (a record of a
	// region of the fleet outside its class's list is a topology break, one of no region is refused).
	Classes map[string][]string
	Regions []string
	// Endpoint is the API's base URL ("": Route 53's own).
	Endpoint string
	// Timeout bounds each API call (0: 5 s); PollInterval is GetChange's interval (0: 5 s).
	Timeout      time.Duration
	PollInterval time.Duration
	// StepInterval is the fleet's failover.step_interval: a record whose TTL is longer is refused
	// when read (resolvers keep the old answer for a TTL, so a step would not have taken effect
	// before the next). 0: not checked.
	StepInterval time.Duration
	// PageSize is ListResourceRecordSets' maxitems (0: Route 53's default, 300).
	PageSize int32
	// Attempts is how many times the SDK sends a request (0: 3).
	Attempts int
	// Credentials replaces the SDK's default credential chain (tests); HTTPClient its HTTP client.
	Credentials aws.CredentialsProvider
	HTTPClient  *http.Client
}

// Router is the route53 driver. A ready region is its record sets at the class's name with their
// weight (1..255), a drained one its record sets at weight 0 (Route 53 still answers them when
// every non-zero record is unhealthy: Notes says so), a withdrawn one (maint) has none: the
// driver deletes them and recreates them exactly when the region comes back, from
// RouterState.Kept (the journal's copy) or else from what this process deleted. Every write is
// one ChangeResourceRecordSets batch (all the step's classes) of DELETEs of every record set of
// each class it changes exactly as last read (unchanged ones too) and CREATEs of them as they
// must be, never an UPSERT: Route 53 applies a batch all-or-nothing and
// refuses a DELETE that does not match the stored record in every field, so another writer's
// edit is router.ErrRouterConflict and nothing is overwritten. A write returns once GetChange
// says INSYNC.
type Router struct {
	cfg    Config
	client *route53.Client
	region map[string]string // set identifier → region

	mu      sync.Mutex
	last    map[string]*classRead          // class → its records as this process last read or wrote them
	deleted map[string]map[string][]Record // class → region → records this process deleted (withdraw)
	notes   map[string][]string            // class → notes of its last read
	change  string                         // the last change id and status, for Notes
}

// classRead is a class's records as last read (or written), by region.
type classRead struct {
	byRegion map[string][]Record
	version  string
}

var (
	_ router.ConditionalDriver = (*Router)(nil)
	_ router.ZeroDrainDriver   = (*Router)(nil)
	_ router.NotingDriver      = (*Router)(nil)
)

// New builds the driver: it loads the AWS configuration (credentials from the default chain
// unless given) and contacts nothing.
func New(c Config) (*Router, error) {
	if c.HostedZoneID == "" {
		return nil, errors.New("route53: no hosted zone id")
	}
	c.HostedZoneID = ZoneID(c.HostedZoneID)
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Attempts <= 0 {
		c.Attempts = 3
	}
	rt := &Router{cfg: c, region: map[string]string{}, last: map[string]*classRead{}, deleted: map[string]map[string][]Record{}, notes: map[string][]string{}}
	rt.cfg.Records = map[string]string{}
	for class, name := range c.Records {
		rt.cfg.Records[class] = CanonicalName(name)
	}
	regions := slices.Clone(c.Regions)
	for _, elig := range c.Classes {
		regions = append(regions, elig...)
	}
	for _, r := range regions {
		id := setIdentifier(c.SetIdentifiers, r)
		if other, dup := rt.region[id]; dup && other != r {
			return nil, fmt.Errorf("route53: regions %s and %s share the set identifier %q", other, r, id)
		}
		rt.region[id] = r
	}
	for class := range c.Classes {
		if rt.cfg.Records[class] == "" {
			return nil, fmt.Errorf("route53: class %s has no record name", class)
		}
	}
	load := []func(*config.LoadOptions) error{
		config.WithLogger(logging.Nop{}),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = c.Attempts
				o.MaxBackoff = 500 * time.Millisecond
				o.Backoff = retry.NewExponentialJitterBackoff(o.MaxBackoff)
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if c.Credentials != nil {
		load = append(load, config.WithCredentialsProvider(c.Credentials))
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("route53: loading the AWS configuration: %v", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // Route 53 is global; its API signs in us-east-1
	}
	rt.client = route53.NewFromConfig(cfg, func(o *route53.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		if c.HTTPClient != nil {
			o.HTTPClient = c.HTTPClient
		}
		o.HTTPClient = boundedClient{o.HTTPClient}
	})
	return rt, nil
}

// String names the hosted zone.
func (rt *Router) String() string { return "route53:" + rt.cfg.HostedZoneID }

// MaxWeight is Route 53's: 0..255.
func (rt *Router) MaxWeight() int { return MaxWeight }

// ZeroWeightIsDrain: a kept record with weight 0 is the drain (Route 53 has no drain state).
func (rt *Router) ZeroWeightIsDrain() bool { return true }

// Notes are the leaks of weight 0 and the last change's status, as of the last read or write.
func (rt *Router) Notes() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []string
	for _, class := range slices.Sorted(maps.Keys(rt.notes)) {
		out = append(out, rt.notes[class]...)
	}
	if rt.change != "" {
		out = append(out, rt.change)
	}
	return out
}

func (rt *Router) classes() []string { return slices.Sorted(maps.Keys(rt.cfg.Classes)) }

// Read reads every class's records.
func (rt *Router) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := rt.ReadVersion(ctx)
	return rs, err
}

// ReadVersion reads every class's records: each class's version is a digest of its records,
// every field, sorted.
func (rt *Router) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	return rt.read(ctx, rt.classes())
}

func (rt *Router) read(ctx context.Context, classes []string) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}, Kept: router.Kept{}}
	v := router.RouterVersion{}
	var topo []string
	for _, class := range classes {
		var notes []string
		byRegion, err := rt.list(ctx, class)
		if err != nil {
			rt.forget(class)
			return router.RouterState{}, nil, err
		}
		ver := digest(byRegion)
		rs.Weights[class] = map[string]int{}
		rs.Kept[class] = map[string]json.RawMessage{}
		broken := false
		var live, drained []string
		for _, r := range slices.Sorted(maps.Keys(byRegion)) {
			recs := byRegion[r]
			if !slices.Contains(rt.cfg.Classes[class], r) {
				topo = append(topo, fmt.Sprintf("%s/%s (%d record(s) at %s, weight %d)", class, r, len(recs), rt.cfg.Records[class], recs[0].Weight))
				broken = true
				continue
			}
			for _, rec := range recs[1:] {
				if rec.Weight != recs[0].Weight {
					rt.forget(class)
					return router.RouterState{}, nil, fmt.Errorf("%s: class %s: region %s's records at %s carry different weights (%s %d, %s %d): the driver cannot map them to one weight",
						rt, class, r, rt.cfg.Records[class], recs[0].Type, recs[0].Weight, rec.Type, rec.Weight)
				}
			}
			w := int(recs[0].Weight)
			rs.Weights[class][r] = w
			if w > 0 {
				rs.States.Set(class, r, router.Ready)
				live = append(live, r)
			} else {
				rs.States.Set(class, r, router.Drain)
				drained = append(drained, r)
			}
			rs.Kept[class][r] = encodeKept(recs)
		}
		for _, r := range rt.cfg.Classes[class] {
			if _, ok := byRegion[r]; !ok {
				rs.Weights[class][r] = 0
				rs.States.Set(class, r, router.Maint)
			}
		}
		for _, r := range drained {
			if len(live) > 0 {
				notes = append(notes, fmt.Sprintf("%s: %s is drained at weight 0 but still answered when every non-zero record is unhealthy", class, r))
			} else {
				notes = append(notes, fmt.Sprintf("%s: %s is at weight 0 with every other record: Route 53 answers all of them alike", class, r))
			}
		}
		v[class] = ver
		rt.mu.Lock()
		rt.notes[class] = notes
		if broken {
			delete(rt.last, class)
		} else {
			rt.last[class] = &classRead{byRegion: byRegion, version: ver}
		}
		rt.mu.Unlock()
	}
	if len(topo) > 0 {
		return router.RouterState{}, nil, fmt.Errorf("%s: %w: %v have weighted records in a class they must never serve; weight 0 is no cut-off on Route 53 (an all-unhealthy or all-zero set answers every record): delete those records",
			rt, router.ErrRouterTopology, topo)
	}
	return rs, v, nil
}

// forget drops what this process last read of class: a class it could not read is written only
// after a read that succeeds.
func (rt *Router) forget(class string) {
	rt.mu.Lock()
	delete(rt.last, class)
	rt.mu.Unlock()
}

// list reads one class's record sets, every type, following pages until the name changes; by
// region (each region's sorted by type).
func (rt *Router) list(ctx context.Context, class string) (map[string][]Record, error) {
	name := rt.cfg.Records[class]
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(rt.cfg.HostedZoneID), StartRecordName: aws.String(name)}
	if rt.cfg.PageSize > 0 {
		in.MaxItems = aws.Int32(rt.cfg.PageSize)
	}
	out := map[string][]Record{}
	seen := map[[2]string]bool{}
	scanAll := false
	for page := 0; ; page++ {
		if page > 1000 {
			return nil, fmt.Errorf("%s: listing %s: more than 1000 pages", rt, name)
		}
		var resp *route53.ListResourceRecordSetsOutput
		err := rt.call(ctx, func(ctx context.Context) (err error) {
			resp, err = rt.client.ListResourceRecordSets(ctx, in)
			return err
		})
		if err != nil {
			return nil, rt.fail("ListResourceRecordSets "+name, err)
		}
		for i, s := range resp.ResourceRecordSets {
			got := CanonicalName(aws.ToString(s.Name))
			if page == 0 && i == 0 && dnsBefore(got, name) {
				// Route 53 starts a listing at StartRecordName, in its DNS order; a server that
				// answers a name before it ignores the start (some fakes and proxies): read
				// every page then, keeping the class's name only.
				scanAll = true
			}
			if got != name {
				if scanAll {
					continue
				}
				return out, nil
			}
			rec, err := fromSDK(s)
			if err != nil {
				return nil, fmt.Errorf("%s: class %s: %v: the driver manages every record set at %s and cannot map this one; remove it or name another record for the class", rt, class, err, name)
			}
			r, ok := rt.region[rec.SetIdentifier]
			if !ok {
				return nil, fmt.Errorf("%s: class %s: record set [name=%s, type=%s, set-identifier=%s] is no region's (set identifiers are the region's name or router.set_identifiers)",
					rt, class, name, rec.Type, rec.SetIdentifier)
			}
			if seen[[2]string{r, rec.Type}] {
				return nil, fmt.Errorf("%s: class %s: region %s has two %s record sets at %s", rt, class, r, rec.Type, name)
			}
			seen[[2]string{r, rec.Type}] = true
			if err := rt.checkTTL(class, rec); err != nil {
				return nil, err
			}
			out[r] = append(out[r], rec)
			sortRecords(out[r])
		}
		if !resp.IsTruncated {
			return out, nil
		}
		if !scanAll && (resp.NextRecordName == nil || CanonicalName(*resp.NextRecordName) != name) {
			return out, nil
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier
	}
}

// dnsBefore says whether name a comes before b in Route 53's listing order: by labels from the
// right (the top-level domain first), each compared as a string.
func dnsBefore(a, b string) bool {
	la, lb := strings.Split(strings.TrimSuffix(a, "."), "."), strings.Split(strings.TrimSuffix(b, "."), ".")
	slices.Reverse(la)
	slices.Reverse(lb)
	return slices.Compare(la, lb) < 0
}

// checkTTL refuses a record whose TTL outlasts a failover step.
func (rt *Router) checkTTL(class string, rec Record) error {
	if rt.cfg.StepInterval <= 0 || rec.TTL == nil {
		return nil
	}
	if ttl := time.Duration(*rec.TTL) * time.Second; ttl > rt.cfg.StepInterval {
		return fmt.Errorf("%s: class %s: record set [name=%s, type=%s, set-identifier=%s] has TTL %s, longer than failover.step_interval %s: resolvers keep the old answer for a TTL, so a step would not take effect before the next; lower the TTL or lengthen step_interval",
			rt, class, rec.Name, rec.Type, rec.SetIdentifier, ttl, rt.cfg.StepInterval)
	}
	return nil
}

// digest is a class's version: its records, every field, sorted by region then type.
func digest(byRegion map[string][]Record) string {
	var all []Record
	for _, r := range slices.Sorted(maps.Keys(byRegion)) {
		all = append(all, byRegion[r]...)
	}
	b, _ := json.Marshal(all)
	return router.DigestOf(b)
}

// Apply reads the router, then writes each class whose records must change as one batch.
func (rt *Router) Apply(ctx context.Context, desired router.RouterState) error {
	if _, _, err := rt.ReadVersion(ctx); err != nil {
		return err
	}
	return rt.write(ctx, desired, nil, func() error { return nil })
}

// ApplyIf writes each class whose records must change as one batch of DELETEs of the records as
// this process last read them and CREATEs of the new ones, where since[class] is still the
// version of that read: Route 53 refuses the whole batch when a DELETE does not match the stored
// record in every field (ErrRouterConflict). A class this process never read is read first.
func (rt *Router) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	var unread []string
	rt.mu.Lock()
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		if rt.last[class] == nil && rt.cfg.Records[class] != "" {
			unread = append(unread, class)
		}
	}
	rt.mu.Unlock()
	if len(unread) > 0 {
		if _, _, err := rt.read(ctx, unread); err != nil {
			return err
		}
	}
	if since == nil {
		since = router.RouterVersion{}
	}
	return rt.write(ctx, desired, since, fence)
}

// write writes desired's classes as ONE batch (a step is all-or-nothing across its classes:
// Route 53 applies a batch whole or refuses it whole); since nil: unconditionally (on the
// records just read).
func (rt *Router) write(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	type planned struct {
		class string
		cur   map[string][]Record
		next  map[string][]Record
	}
	var (
		all     []types.Change
		classes []planned
	)
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		if rt.cfg.Records[class] == "" {
			return fmt.Errorf("%s: class %s: no record name for it (router.records)", rt, class)
		}
		rt.mu.Lock()
		cur := rt.last[class]
		rt.mu.Unlock()
		if cur == nil {
			return fmt.Errorf("%s: class %s: not read back: %w", rt, class, router.ErrRouterConflict)
		}
		if since != nil {
			if err := router.SameVersion(rt.String(), class, since, cur.version); err != nil {
				return err
			}
		}
		changes, next, err := rt.plan(class, desired, cur.byRegion)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			continue
		}
		all = append(all, changes...)
		classes = append(classes, planned{class, cur.byRegion, next})
	}
	if len(all) == 0 {
		return nil
	}
	if err := fence(); err != nil {
		return err
	}
	names := make([]string, len(classes))
	for i, p := range classes {
		names[i] = p.class
	}
	if err := rt.send(ctx, names, all); err != nil {
		return err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, p := range classes {
		for r, recs := range p.cur {
			if _, ok := p.next[r]; !ok {
				if rt.deleted[p.class] == nil {
					rt.deleted[p.class] = map[string][]Record{}
				}
				rt.deleted[p.class][r] = recs
			}
		}
		rt.last[p.class] = &classRead{byRegion: p.next, version: digest(p.next)}
	}
	return nil
}

// plan is the batch that takes class from cur to desired: per changed region, DELETE of each
// record as read and CREATE of it with the new weight; a withdrawn region's DELETEs only; a
// region coming back, CREATEs of its kept records. It refuses an all-zero result and a record of
// a region outside the class.
func (rt *Router) plan(class string, desired router.RouterState, cur map[string][]Record) ([]types.Change, map[string][]Record, error) {
	elig := rt.cfg.Classes[class]
	name := rt.cfg.Records[class]
	next := map[string][]Record{}
	var changes, guards []types.Change
	regions := map[string]bool{}
	for r := range cur {
		regions[r] = true
	}
	for _, r := range elig {
		regions[r] = true
	}
	for r := range desired.Weights[class] {
		regions[r] = true
	}
	for r := range desired.States[class] {
		regions[r] = true
	}
	for _, r := range slices.Sorted(maps.Keys(regions)) {
		w, st := desired.Weights[class][r], desired.States.Get(class, r)
		_, explicit := desired.States[class][r]
		if !slices.Contains(elig, r) {
			if w != 0 || explicit && st != router.Maint {
				return nil, nil, fmt.Errorf("%s: class %s: the desired state gives region %s (weight %d, %s) a record, but it is not eligible for the class: %w", rt, class, r, w, st, router.ErrRouterTopology)
			}
			if len(cur[r]) > 0 {
				return nil, nil, fmt.Errorf("%s: class %s: region %s has records but is not eligible for the class: %w", rt, class, r, router.ErrRouterTopology)
			}
			continue
		}
		_, named := desired.Weights[class][r]
		present := st != router.Maint && (named || explicit) // a region desired does not name is cut off, as on every driver
		if st == router.Drain {
			w = 0 // the drain is weight 0 here
		}
		if w < 0 || w > MaxWeight {
			return nil, nil, fmt.Errorf("%s: class %s: weight %d of %s is outside Route 53's 0..%d", rt, class, w, r, MaxWeight)
		}
		have := cur[r]
		switch {
		case !present:
			for _, rec := range have {
				changes = append(changes, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: rec.sdk()})
			}
		case len(have) > 0:
			same := true
			for _, rec := range have {
				same = same && rec.Weight == int64(w)
			}
			var recs []Record
			for _, rec := range have {
				n := rec
				n.Weight = int64(w)
				recs = append(recs, n)
				pair := []types.Change{{Action: types.ChangeActionDelete, ResourceRecordSet: rec.sdk()},
					{Action: types.ChangeActionCreate, ResourceRecordSet: n.sdk()}}
				if same {
					guards = append(guards, pair...)
				} else {
					changes = append(changes, pair...)
				}
			}
			next[r] = recs
		default:
			recs, err := rt.kept(class, r, desired.Kept)
			if err != nil {
				return nil, nil, err
			}
			for i := range recs {
				recs[i].Weight = int64(w)
				if err := rt.checkTTL(class, recs[i]); err != nil {
					return nil, nil, err
				}
				changes = append(changes, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: recs[i].sdk()})
			}
			next[r] = recs
		}
	}
	if len(changes) > 0 {
		// The unchanged regions' record sets go in the batch too, deleted and created as they
		// are: a batch fails whole if any of them is no longer as read, so it is conditional on
		// every record set of the class this run read, not only on those it changes.
		changes = append(changes, guards...)
	}
	if len(next) > 0 {
		total := int64(0)
		for _, recs := range next {
			total += recs[0].Weight
		}
		if total == 0 {
			return nil, nil, fmt.Errorf("%s: class %s: refused: every record left at %s would have weight 0, and Route 53 then answers all of them alike (a drain would take traffic); keep one region above 0 or withdraw them", rt, class, name)
		}
	}
	return changes, next, nil
}

// kept is the records to recreate for a region coming back: the journal's (desired.Kept), else
// what this process deleted.
func (rt *Router) kept(class, region string, k router.Kept) ([]Record, error) {
	id := setIdentifier(rt.cfg.SetIdentifiers, region)
	if b, ok := k[class][region]; ok {
		recs, err := DecodeKept(b, rt.cfg.Records[class], id)
		if err != nil {
			return nil, fmt.Errorf("%s: class %s: region %s: the journaled record to recreate is unusable: %v", rt, class, region, err)
		}
		return recs, nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if recs := rt.deleted[class][region]; len(recs) > 0 {
		return slices.Clone(recs), nil
	}
	return nil, fmt.Errorf("%s: class %s: region %s has no record at %s and there is no journaled record to recreate (the driver never creates a record it has not read): create its weighted record (set identifier %q) in Route 53 with weight 0, then run again",
		rt, class, region, rt.cfg.Records[class], id)
}

// send writes one batch (the changes of classes) and waits until Route 53 says it is INSYNC.
func (rt *Router) send(ctx context.Context, classes []string, changes []types.Change) error {
	what := "class " + strings.Join(classes, ", class ")
	var names []string
	for _, c := range classes {
		names = append(names, rt.cfg.Records[c])
	}
	in := &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(rt.cfg.HostedZoneID), ChangeBatch: &types.ChangeBatch{
		Comment: aws.String("lifeboat: " + what), Changes: changes}}
	var resp *route53.ChangeResourceRecordSetsOutput
	// Sent once, never retried by the SDK: had a batch landed and its answer been lost, the
	// retry's DELETEs would no longer match and read as someone else's edit. A lost answer is
	// ErrRouterUnreachable instead, and the executor's read-back settles whether it landed.
	err := rt.call(ctx, func(ctx context.Context) (err error) {
		resp, err = rt.client.ChangeResourceRecordSets(ctx, in, func(o *route53.Options) {
			o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1)
		})
		return err
	})
	var icb *types.InvalidChangeBatch
	if errors.As(err, &icb) {
		return fmt.Errorf("%s: %s: Route 53 refused the batch (%s): someone else changed the record sets at %s since this run read them; nothing was overwritten: %w",
			rt, what, router.FirstLine(strings.Join(icb.Messages, "; ")), strings.Join(names, ", "), router.ErrRouterConflict)
	}
	if err != nil {
		return rt.fail("ChangeResourceRecordSets "+strings.Join(names, ", "), err)
	}
	id := ""
	if resp.ChangeInfo != nil {
		id = aws.ToString(resp.ChangeInfo.Id)
	}
	return rt.waitInSync(ctx, what, id)
}

// waitInSync polls GetChange every PollInterval until INSYNC, bounded by ctx.
func (rt *Router) waitInSync(ctx context.Context, what, id string) error {
	short := id[strings.LastIndex(id, "/")+1:]
	rt.note(fmt.Sprintf("%s: change %s PENDING", what, short))
	for {
		var resp *route53.GetChangeOutput
		err := rt.call(ctx, func(ctx context.Context) (err error) {
			resp, err = rt.client.GetChange(ctx, &route53.GetChangeInput{Id: aws.String(short)})
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %s: change %s was accepted but is still PENDING when the wait ended: %v: %w", rt, what, short, ctx.Err(), router.ErrRouterUnreachable)
			}
			return rt.fail("GetChange "+short, err)
		}
		if resp.ChangeInfo != nil && resp.ChangeInfo.Status == types.ChangeStatusInsync {
			rt.note(fmt.Sprintf("%s: change %s INSYNC", what, short))
			return nil
		}
		if err := wait.Sleep(ctx, rt.cfg.PollInterval); err != nil {
			return fmt.Errorf("%s: %s: change %s was accepted but is still PENDING when the wait ended: %v: %w", rt, what, short, err, router.ErrRouterUnreachable)
		}
	}
}

func (rt *Router) note(s string) {
	rt.mu.Lock()
	rt.change = s
	rt.mu.Unlock()
}

// call runs one API call bounded by the driver's timeout.
func (rt *Router) call(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, rt.cfg.Timeout)
	defer cancel()
	return fn(ctx)
}

// fail classifies an SDK error: no answer, a 5xx, throttling → ErrRouterUnreachable; missing
// credentials and other API errors are plain errors. The message carries no credential.
func (rt *Router) fail(what string, err error) error {
	msg := describe(err)
	if noCredentials(err) {
		return fmt.Errorf("%s: %s: no usable AWS credentials in the SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web identity, the instance's or task's role): %s", rt, what, msg)
	}
	if unreachable(err) {
		return fmt.Errorf("%s: %s: %s: %w", rt, what, msg, router.ErrRouterUnreachable)
	}
	return fmt.Errorf("%s: %s: %s", rt, what, msg)
}

func describe(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		s := ae.ErrorCode()
		if m := ae.ErrorMessage(); m != "" {
			s += ": " + m
		}
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
			s = fmt.Sprintf("HTTP %d %s", re.HTTPStatusCode(), s)
		}
		return router.FirstLine(s)
	}
	return router.FirstLine(err.Error())
}

func unreachable(err error) bool {
	if noCredentials(err) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "Throttling", "ThrottlingException", "PriorRequestNotComplete", "ServiceUnavailable", "InternalError", "RequestTimeout":
			return true
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		if code := re.HTTPStatusCode(); code >= 500 || code == http.StatusTooManyRequests {
			return true
		}
	}
	var se *smithyhttp.RequestSendError
	var ne net.Error
	return errors.As(err, &se) || errors.As(err, &ne)
}

// noCredentials: the SDK found no credentials in its default chain and sent nothing.
func noCredentials(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "get identity: ") || strings.Contains(msg, "failed to retrieve credentials") ||
		strings.Contains(msg, "failed to refresh cached credentials")
}

// boundedClient bounds every answer's body to router.MaxBody: a list page is a few hundred
// record sets, and an endpoint that answers without end is refused, not read into memory.
type boundedClient struct{ c aws.HTTPClient }

func (b boundedClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := b.c.Do(r)
	if err == nil && resp != nil && resp.Body != nil {
		resp.Body = &boundedBody{rc: resp.Body, left: router.MaxBody}
	}
	return resp, err
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 && err != nil {
			return 0, err // the end (io.EOF) right at the bound, or the body's own error
		}
		return 0, fmt.Errorf("route53: answer larger than %d bytes", router.MaxBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
