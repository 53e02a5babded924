package route53fake

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Namespace is Route 53's XML namespace.
const Namespace = "https://route53.amazonaws.com/doc/2013-04-01/"

// Record is one resource record set, in Route 53's XML shape (and, for seed files, JSON with the
// same field names).
type Record struct {
	Name                    string                `xml:"Name" json:"Name"`
	Type                    string                `xml:"Type" json:"Type"`
	SetIdentifier           string                `xml:"SetIdentifier,omitempty" json:"SetIdentifier,omitempty"`
	Weight                  *int64                `xml:"Weight,omitempty" json:"Weight,omitempty"`
	Region                  string                `xml:"Region,omitempty" json:"Region,omitempty"`
	GeoLocation             *GeoLocation          `xml:"GeoLocation,omitempty" json:"GeoLocation,omitempty"`
	Failover                string                `xml:"Failover,omitempty" json:"Failover,omitempty"`
	MultiValueAnswer        *bool                 `xml:"MultiValueAnswer,omitempty" json:"MultiValueAnswer,omitempty"`
	TTL                     *int64                `xml:"TTL,omitempty" json:"TTL,omitempty"`
	ResourceRecords         []ResourceRecord      `xml:"ResourceRecords>ResourceRecord,omitempty" json:"ResourceRecords,omitempty"`
	AliasTarget             *AliasTarget          `xml:"AliasTarget,omitempty" json:"AliasTarget,omitempty"`
	HealthCheckId           string                `xml:"HealthCheckId,omitempty" json:"HealthCheckId,omitempty"`
	TrafficPolicyInstanceId string                `xml:"TrafficPolicyInstanceId,omitempty" json:"TrafficPolicyInstanceId,omitempty"`
	CidrRoutingConfig       *CidrRoutingConfig    `xml:"CidrRoutingConfig,omitempty" json:"CidrRoutingConfig,omitempty"`
	GeoProximityLocation    *GeoProximityLocation `xml:"GeoProximityLocation,omitempty" json:"GeoProximityLocation,omitempty"`
}

// ResourceRecord is one value of a record set.
type ResourceRecord struct {
	Value string `xml:"Value" json:"Value"`
}

// AliasTarget is an alias record's target.
type AliasTarget struct {
	HostedZoneId         string `xml:"HostedZoneId" json:"HostedZoneId"`
	DNSName              string `xml:"DNSName" json:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth" json:"EvaluateTargetHealth"`
}

// GeoLocation is a geolocation record's location.
type GeoLocation struct {
	ContinentCode   string `xml:"ContinentCode,omitempty" json:"ContinentCode,omitempty"`
	CountryCode     string `xml:"CountryCode,omitempty" json:"CountryCode,omitempty"`
	SubdivisionCode string `xml:"SubdivisionCode,omitempty" json:"SubdivisionCode,omitempty"`
}

// CidrRoutingConfig is an IP-based record's CIDR location.
type CidrRoutingConfig struct {
	CollectionId string `xml:"CollectionId" json:"CollectionId"`
	LocationName string `xml:"LocationName" json:"LocationName"`
}

// GeoProximityLocation is a geoproximity record's location.
type GeoProximityLocation struct {
	AWSRegion      string       `xml:"AWSRegion,omitempty" json:"AWSRegion,omitempty"`
	LocalZoneGroup string       `xml:"LocalZoneGroup,omitempty" json:"LocalZoneGroup,omitempty"`
	Coordinates    *Coordinates `xml:"Coordinates,omitempty" json:"Coordinates,omitempty"`
	Bias           *int32       `xml:"Bias,omitempty" json:"Bias,omitempty"`
}

// Coordinates are a geoproximity location's.
type Coordinates struct {
	Latitude  string `xml:"Latitude" json:"Latitude"`
	Longitude string `xml:"Longitude" json:"Longitude"`
}

// Weighted builds a weighted record set of simple values (a helper for tests and seeds).
func Weighted(name, typ, id string, weight, ttl int64, values ...string) Record {
	r := Record{Name: name, Type: typ, SetIdentifier: id, Weight: &weight, TTL: &ttl}
	for _, v := range values {
		r.ResourceRecords = append(r.ResourceRecords, ResourceRecord{Value: v})
	}
	return r
}

// Key is what identifies a record set in a zone: name, type and set identifier.
type Key struct{ Name, Type, SetIdentifier string }

func (k Key) String() string {
	s := fmt.Sprintf("[name='%s', type='%s'", k.Name, k.Type)
	if k.SetIdentifier != "" {
		s += fmt.Sprintf(", set-identifier='%s'", k.SetIdentifier)
	}
	return s + "]"
}

// Key is r's key.
func (r Record) Key() Key { return Key{r.Name, r.Type, r.SetIdentifier} }

// Normalize lower-cases names and gives them a trailing dot, as Route 53 stores them.
func (r Record) Normalize() Record {
	r.Name = CanonicalName(r.Name)
	r.Type = strings.ToUpper(r.Type)
	if r.AliasTarget != nil {
		a := *r.AliasTarget
		a.DNSName = CanonicalName(a.DNSName)
		r.AliasTarget = &a
	}
	return r
}

// CanonicalName is a DNS name lower-cased with a trailing dot.
func CanonicalName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Change is one change of a batch.
type Change struct {
	Action            string `xml:"Action"`
	ResourceRecordSet Record `xml:"ResourceRecordSet"`
}

type changeRequest struct {
	XMLName xml.Name `xml:"ChangeResourceRecordSetsRequest"`
	Comment string   `xml:"ChangeBatch>Comment"`
	Changes []Change `xml:"ChangeBatch>Changes>Change"`
}

// ChangeRecord is a change batch the fake accepted.
type ChangeRecord struct {
	ID      string
	Zone    string
	Changes []Change
	Polls   int // GetChange calls so far
	Status  string
}

// Server is the fake: zones of record sets, changes, counters. Its exported knobs may be set
// before it serves or under no concurrent request.
type Server struct {
	// PendingPolls is how many GetChange calls of a change answer PENDING before INSYNC.
	PendingPolls int
	// BeforeChange, when set, is called with the 1-based number of each ChangeResourceRecordSets
	// request before the fake looks at it (and without its lock held): another writer's edit made
	// there lands between a client's read and its batch, deterministically.
	BeforeChange func(n int)
	// IgnoreStart makes ListResourceRecordSets ignore name, type, identifier and maxitems and
	// answer the whole zone in one page, as naive fakes do (Route 53 itself never does).
	IgnoreStart bool

	mu       sync.Mutex
	zones    map[string][]Record // zone id → record sets
	changes  map[string]*ChangeRecord
	order    []string // change ids, oldest first
	seq      int
	upserts  int
	requests map[string]int // operation → calls
	failNext []int          // HTTP statuses to answer the next requests with
	failed   int            // requests answered from failNext
}

// New returns a fake with no zones.
func New() *Server {
	return &Server{zones: map[string][]Record{}, changes: map[string]*ChangeRecord{}, requests: map[string]int{}}
}

// AddZone creates an empty hosted zone (no-op when it exists).
func (s *Server) AddZone(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id = zoneID(id)
	if _, ok := s.zones[id]; !ok {
		s.zones[id] = nil
	}
}

func zoneID(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// Put sets record sets behind any client's back, replacing those with the same key (creating the
// zone if need be). It validates nothing: a test may seed what Route 53 would refuse.
func (s *Server) Put(zone string, recs ...Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	zone = zoneID(zone)
	rs := s.zones[zone]
	for _, r := range recs {
		r = r.Normalize()
		rs = slices.DeleteFunc(rs, func(o Record) bool { return o.Key() == r.Key() })
		rs = append(rs, r)
	}
	sortRecords(rs)
	s.zones[zone] = rs
}

// Remove deletes record sets by key behind any client's back; it reports whether one was there.
func (s *Server) Remove(zone string, k Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	zone = zoneID(zone)
	k.Name, k.Type = CanonicalName(k.Name), strings.ToUpper(k.Type)
	n := len(s.zones[zone])
	s.zones[zone] = slices.DeleteFunc(s.zones[zone], func(o Record) bool { return o.Key() == k })
	return len(s.zones[zone]) < n
}

// Edit changes the record sets of zone for which match is true, behind any client's back.
func (s *Server) Edit(zone string, match func(Record) bool, edit func(*Record)) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	zone = zoneID(zone)
	n := 0
	for i := range s.zones[zone] {
		if match(s.zones[zone][i]) {
			edit(&s.zones[zone][i])
			s.zones[zone][i] = s.zones[zone][i].Normalize()
			n++
		}
	}
	sortRecords(s.zones[zone])
	return n
}

// Records lists a zone's record sets in Route 53's order (deep copies).
func (s *Server) Records(zone string) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.zones[zoneID(zone)]))
	for _, r := range s.zones[zoneID(zone)] {
		out = append(out, clone(r))
	}
	return out
}

// Upserts counts the UPSERT changes the fake has been sent (accepted or not).
func (s *Server) Upserts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upserts
}

// Requests counts the calls of an operation: "ChangeResourceRecordSets", "ListResourceRecordSets",
// "GetChange".
func (s *Server) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[op]
}

// Changes are the accepted change batches, oldest first (copies).
func (s *Server) Changes() []ChangeRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ChangeRecord
	for _, id := range s.order {
		out = append(out, *s.changes[id])
	}
	return out
}

// FailNext makes the next len(statuses) requests answer those HTTP statuses (500, 503: an
// InternalError/ServiceUnavailable; 400: a Throttling error) without doing anything.
func (s *Server) FailNext(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, statuses...)
}

// Failed counts the requests answered with a FailNext status.
func (s *Server) Failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Start serves the fake on a loopback port until the test ends; it returns the base URL.
func (s *Server) Start(t interface{ Cleanup(func()) }) string {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

// ServeHTTP serves Route 53's API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if len(s.failNext) > 0 {
		code := s.failNext[0]
		s.failNext = s.failNext[1:]
		s.failed++
		s.mu.Unlock()
		switch code {
		case http.StatusBadRequest:
			writeError(w, code, "Throttling", "Rate exceeded")
		case http.StatusServiceUnavailable:
			writeError(w, code, "ServiceUnavailable", "Service unavailable")
		default:
			writeError(w, code, "InternalError", "Internal error")
		}
		return
	}
	s.mu.Unlock()
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/2013-04-01/hostedzone/") && strings.HasSuffix(p, "/rrset"):
		zone := strings.TrimSuffix(strings.TrimPrefix(p, "/2013-04-01/hostedzone/"), "/rrset")
		switch r.Method {
		case http.MethodPost:
			s.change(w, r, zone)
		case http.MethodGet:
			s.list(w, r, zone)
		default:
			writeError(w, http.StatusMethodNotAllowed, "InvalidInput", "method not allowed")
		}
	case strings.HasPrefix(p, "/2013-04-01/hostedzone/") && r.Method == http.MethodGet && strings.Count(p, "/") == 3:
		s.getZone(w, strings.TrimPrefix(p, "/2013-04-01/hostedzone/"))
	case strings.HasPrefix(p, "/2013-04-01/change/") && r.Method == http.MethodGet:
		s.getChange(w, p[strings.LastIndex(p, "/")+1:])
	default:
		writeError(w, http.StatusNotFound, "InvalidInput", "the fake does not serve "+r.Method+" "+p)
	}
}

func (s *Server) count(op string) {
	s.mu.Lock()
	s.requests[op]++
	s.mu.Unlock()
}

func (s *Server) change(w http.ResponseWriter, r *http.Request, zone string) {
	s.count("ChangeResourceRecordSets")
	if s.BeforeChange != nil {
		s.BeforeChange(s.Requests("ChangeResourceRecordSets"))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidInput", "reading the request: "+err.Error())
		return
	}
	var req changeRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidInput", "malformed ChangeResourceRecordSetsRequest: "+err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range req.Changes {
		if c.Action == "UPSERT" {
			s.upserts++
		}
	}
	cur, ok := s.zones[zone]
	if !ok {
		writeError(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zone)
		return
	}
	if len(req.Changes) == 0 {
		writeError(w, http.StatusBadRequest, "InvalidInput", "ChangeBatch has no changes")
		return
	}
	next, msgs := applyBatch(cur, req.Changes)
	if len(msgs) > 0 {
		writeInvalidChangeBatch(w, msgs)
		return
	}
	sortRecords(next)
	s.zones[zone] = next
	s.seq++
	id := fmt.Sprintf("C%016X", 0xA1B2C3D4E5+s.seq)
	var changes []Change
	for _, c := range req.Changes {
		c.ResourceRecordSet = clone(c.ResourceRecordSet.Normalize())
		changes = append(changes, c)
	}
	s.changes[id] = &ChangeRecord{ID: id, Zone: zone, Changes: changes, Status: "PENDING"}
	s.order = append(s.order, id)
	writeXML(w, http.StatusOK, changeInfoResponse{XMLName: xml.Name{Local: "ChangeResourceRecordSetsResponse"}, Xmlns: Namespace,
		ChangeInfo: changeInfo{ID: "/change/" + id, Status: "PENDING", SubmittedAt: time.Now().UTC().Format(time.RFC3339), Comment: req.Comment}})
}

// applyBatch applies changes to a copy of cur, in order, and returns it with every problem (a
// batch with any problem changes nothing).
func applyBatch(cur []Record, changes []Change) ([]Record, []string) {
	next := make([]Record, len(cur))
	copy(next, cur)
	var msgs []string
	find := func(k Key) int { return slices.IndexFunc(next, func(o Record) bool { return o.Key() == k }) }
	for _, c := range changes {
		rec := c.ResourceRecordSet.Normalize()
		if m := validate(rec); m != "" {
			msgs = append(msgs, m)
			continue
		}
		i := find(rec.Key())
		switch c.Action {
		case "CREATE":
			if i >= 0 {
				msgs = append(msgs, fmt.Sprintf("Tried to create resource record set %s but it already exists", rec.Key()))
				continue
			}
			next = append(next, rec)
		case "DELETE":
			switch {
			case i < 0:
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set %s but it was not found", rec.Key()))
				continue
			case !Equal(next[i], rec):
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set %s but the values provided do not match the current values", rec.Key()))
				continue
			}
			next = slices.Delete(next, i, i+1)
		case "UPSERT":
			if i >= 0 {
				next[i] = rec
			} else {
				next = append(next, rec)
			}
		default:
			msgs = append(msgs, fmt.Sprintf("Invalid action %q: want CREATE, DELETE or UPSERT", c.Action))
		}
	}
	if len(msgs) == 0 {
		msgs = consistent(next)
	}
	return next, msgs
}

// validate is one record set's own rules.
func validate(r Record) string {
	switch {
	case r.Name == "." || r.Type == "":
		return fmt.Sprintf("Invalid resource record set %s: a name and a type are required", r.Key())
	case r.Weight != nil && r.SetIdentifier == "":
		return fmt.Sprintf("Invalid resource record set %s: a weighted record needs a SetIdentifier", r.Key())
	case r.Weight != nil && (*r.Weight < 0 || *r.Weight > 255):
		return fmt.Sprintf("Invalid resource record set %s: weight %d is outside 0..255", r.Key(), *r.Weight)
	case r.SetIdentifier != "" && policies(r) == 0:
		return fmt.Sprintf("Invalid resource record set %s: a SetIdentifier without a routing policy", r.Key())
	case policies(r) > 1:
		return fmt.Sprintf("Invalid resource record set %s: more than one routing policy", r.Key())
	case r.AliasTarget != nil && (len(r.ResourceRecords) > 0 || r.TTL != nil):
		return fmt.Sprintf("Invalid resource record set %s: an alias has neither TTL nor ResourceRecords", r.Key())
	case r.AliasTarget == nil && r.TrafficPolicyInstanceId == "" && (len(r.ResourceRecords) == 0 || r.TTL == nil):
		return fmt.Sprintf("Invalid resource record set %s: TTL and ResourceRecords are required", r.Key())
	case r.Type == "CNAME" && len(r.ResourceRecords) > 1:
		return fmt.Sprintf("Invalid resource record set %s: a CNAME has one value", r.Key())
	}
	return ""
}

func policies(r Record) int {
	n := 0
	for _, set := range []bool{r.Weight != nil, r.Region != "", r.GeoLocation != nil, r.Failover != "",
		r.MultiValueAnswer != nil, r.CidrRoutingConfig != nil, r.GeoProximityLocation != nil} {
		if set {
			n++
		}
	}
	return n
}

// consistent is the zone-wide rules: the record sets of one name and type share one routing
// policy (all weighted or none, and at most one without a set identifier), and a CNAME shares its
// name with no other type.
func consistent(rs []Record) []string {
	var msgs []string
	type nt struct{ name, typ string }
	groups := map[nt][]Record{}
	types := map[string]map[string]bool{}
	for _, r := range rs {
		groups[nt{r.Name, r.Type}] = append(groups[nt{r.Name, r.Type}], r)
		if types[r.Name] == nil {
			types[r.Name] = map[string]bool{}
		}
		types[r.Name][r.Type] = true
	}
	for k, g := range groups {
		weighted := 0
		plain := 0
		for _, r := range g {
			if r.Weight != nil {
				weighted++
			}
			if r.SetIdentifier == "" {
				plain++
			}
		}
		if weighted > 0 && weighted < len(g) || plain > 0 && len(g) > 1 {
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s, type %s cannot mix routing policies", k.name, k.typ))
		}
	}
	for name, ts := range types {
		if ts["CNAME"] && len(ts) > 1 {
			msgs = append(msgs, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted as it conflicts with other records with the same DNS name in zone", name))
		}
	}
	slices.Sort(msgs)
	return msgs
}

// Equal says whether two record sets are the same in every field (names compared canonically).
func Equal(a, b Record) bool {
	a, b = a.Normalize(), b.Normalize()
	if len(a.ResourceRecords) == 0 {
		a.ResourceRecords = nil
	}
	if len(b.ResourceRecords) == 0 {
		b.ResourceRecords = nil
	}
	return reflect.DeepEqual(a, b)
}

func clone(r Record) Record {
	b, _ := json.Marshal(r)
	var out Record
	_ = json.Unmarshal(b, &out)
	return out
}

// labels is a name's labels, last first: Route 53 lists record sets in that order.
func labels(name string) []string {
	l := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(l)
	return l
}

func compareKey(a, b Key) int {
	if c := slices.Compare(labels(a.Name), labels(b.Name)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.SetIdentifier, b.SetIdentifier)
}

func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int { return compareKey(a.Key(), b.Key()) })
}

type listResponse struct {
	XMLName              xml.Name `xml:"ListResourceRecordSetsResponse"`
	Xmlns                string   `xml:"xmlns,attr"`
	ResourceRecordSets   []Record `xml:"ResourceRecordSets>ResourceRecordSet"`
	IsTruncated          bool     `xml:"IsTruncated"`
	NextRecordName       string   `xml:"NextRecordName,omitempty"`
	NextRecordType       string   `xml:"NextRecordType,omitempty"`
	NextRecordIdentifier string   `xml:"NextRecordIdentifier,omitempty"`
	MaxItems             int      `xml:"MaxItems"`
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, zone string) {
	s.count("ListResourceRecordSets")
	q := r.URL.Query()
	maxItems := 300
	if v := q.Get("maxitems"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "InvalidInput", "maxitems must be a positive integer")
			return
		}
		maxItems = min(n, 300)
	}
	name, typ, ident := q.Get("name"), strings.ToUpper(q.Get("type")), q.Get("identifier")
	switch {
	case typ != "" && name == "":
		writeError(w, http.StatusBadRequest, "InvalidInput", "The input is not valid: type requires name")
		return
	case ident != "" && typ == "":
		writeError(w, http.StatusBadRequest, "InvalidInput", "The input is not valid: identifier requires type")
		return
	}
	s.mu.Lock()
	recs, ok := s.zones[zone]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zone)
		return
	}
	recs = slices.Clone(recs)
	s.mu.Unlock()
	start := 0
	if s.IgnoreStart {
		name, maxItems = "", len(recs)
	}
	if name != "" {
		from := Key{CanonicalName(name), typ, ident}
		start = len(recs)
		for i, rec := range recs {
			if compareKey(rec.Key(), from) >= 0 {
				start = i
				break
			}
		}
	}
	out := listResponse{Xmlns: Namespace, MaxItems: maxItems}
	end := min(start+maxItems, len(recs))
	for _, rec := range recs[start:end] {
		out.ResourceRecordSets = append(out.ResourceRecordSets, clone(rec))
	}
	if end < len(recs) {
		out.IsTruncated = true
		out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier = recs[end].Name, recs[end].Type, recs[end].SetIdentifier
	}
	writeXML(w, http.StatusOK, out)
}

type changeInfo struct {
	ID          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
	Comment     string `xml:"Comment,omitempty"`
}

type changeInfoResponse struct {
	XMLName    xml.Name
	Xmlns      string     `xml:"xmlns,attr"`
	ChangeInfo changeInfo `xml:"ChangeInfo"`
}

func (s *Server) getChange(w http.ResponseWriter, id string) {
	s.count("GetChange")
	s.mu.Lock()
	c, ok := s.changes[id]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "NoSuchChange", "A change with the specified change ID does not exist: "+id)
		return
	}
	c.Polls++
	if c.Polls > s.PendingPolls {
		c.Status = "INSYNC"
	}
	info := changeInfo{ID: "/change/" + c.ID, Status: c.Status, SubmittedAt: time.Now().UTC().Format(time.RFC3339)}
	s.mu.Unlock()
	writeXML(w, http.StatusOK, changeInfoResponse{XMLName: xml.Name{Local: "GetChangeResponse"}, Xmlns: Namespace, ChangeInfo: info})
}

var requestSeq struct {
	sync.Mutex
	n int
}

func requestID() string {
	requestSeq.Lock()
	defer requestSeq.Unlock()
	requestSeq.n++
	return fmt.Sprintf("fake-%08d", requestSeq.n)
}

type errorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

// writeError answers Route 53's generic error shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e errorResponse
	e.Xmlns, e.RequestID = Namespace, requestID()
	e.Error.Type, e.Error.Code, e.Error.Message = "Sender", code, msg
	if status >= 500 {
		e.Error.Type = "Receiver"
	}
	writeXML(w, status, e)
}

type invalidChangeBatch struct {
	XMLName   xml.Name `xml:"InvalidChangeBatch"`
	Xmlns     string   `xml:"xmlns,attr"`
	Messages  []string `xml:"Messages>Message"`
	RequestID string   `xml:"RequestId"`
}

// writeInvalidChangeBatch answers Route 53's own shape for a refused batch (HTTP 400).
func writeInvalidChangeBatch(w http.ResponseWriter, msgs []string) {
	writeXML(w, http.StatusBadRequest, invalidChangeBatch{Xmlns: Namespace, Messages: msgs, RequestID: requestID()})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	if err := xml.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", requestID())
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// ZoneName is the domain GetHostedZone answers for every zone.
const ZoneName = "example.com."

type hostedZone struct {
	ID                     string `xml:"Id"`
	Name                   string `xml:"Name"`
	CallerReference        string `xml:"CallerReference"`
	ResourceRecordSetCount int    `xml:"ResourceRecordSetCount"`
}

type getZoneResponse struct {
	XMLName     xml.Name   `xml:"GetHostedZoneResponse"`
	Xmlns       string     `xml:"xmlns,attr"`
	HostedZone  hostedZone `xml:"HostedZone"`
	NameServers []string   `xml:"DelegationSet>NameServers>NameServer"`
}

// getZone answers GetHostedZone: every zone of the fake is a zone of ZoneName.
func (s *Server) getZone(w http.ResponseWriter, zone string) {
	s.count("GetHostedZone")
	s.mu.Lock()
	recs, ok := s.zones[zone]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zone)
		return
	}
	writeXML(w, http.StatusOK, getZoneResponse{Xmlns: Namespace, HostedZone: hostedZone{ID: "/hostedzone/" + zone, Name: ZoneName,
		CallerReference: "route53fake", ResourceRecordSetCount: len(recs)}, NameServers: []string{"ns-1.fake.invalid"}})
}

// Seed is a seed file's content: zones and their record sets.
type Seed struct {
	Zones map[string][]Record `json:"zones"`
}

// LoadFile adds the zones and record sets of a JSON seed file (see testdata/seed.json). Unknown
// fields are an error, so a misspelt one is not silently a record without it.
func (s *Server) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sd Seed
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sd); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	s.Load(sd)
	return nil
}

// Load adds a seed's zones and record sets.
func (s *Server) Load(seed Seed) {
	for zone, recs := range seed.Zones {
		s.AddZone(zone)
		s.Put(zone, recs...)
	}
}
