package route53

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// Record is one weighted resource record set as the driver read it: every field Route 53 has for
// a weighted record, in a JSON shape of the driver's own (stable whatever the SDK's types
// become). A region's records (one per type) are what RouterState.Kept holds for it, as Kept:
//
//	{"records": [{"name": "api.example.com.", "type": "A", "set_identifier": "euw1", "weight": 10,
//	  "ttl": 60, "values": ["192.0.2.10"], "health_check_id": "…"}, …]}
//
// An alias record has "alias_target": {"hosted_zone_id", "dns_name", "evaluate_target_health"}
// instead of ttl and values.
type Record struct {
	Name                    string       `json:"name"`
	Type                    string       `json:"type"`
	SetIdentifier           string       `json:"set_identifier"`
	Weight                  int64        `json:"weight"`
	TTL                     *int64       `json:"ttl,omitempty"`
	Values                  []string     `json:"values,omitempty"`
	HealthCheckID           string       `json:"health_check_id,omitempty"`
	AliasTarget             *AliasTarget `json:"alias_target,omitempty"`
	TrafficPolicyInstanceID string       `json:"traffic_policy_instance_id,omitempty"`
}

// AliasTarget is an alias record's target.
type AliasTarget struct {
	HostedZoneID         string `json:"hosted_zone_id"`
	DNSName              string `json:"dns_name"`
	EvaluateTargetHealth bool   `json:"evaluate_target_health"`
}

// Kept is the JSON of one region's records in RouterState.Kept.
type Kept struct {
	Records []Record `json:"records"`
}

// fromSDK converts a listed record set; an error says why the driver cannot map it (not a
// weighted record, or weighted and another routing policy at once).
func fromSDK(s types.ResourceRecordSet) (Record, error) {
	r := Record{Name: CanonicalName(aws.ToString(s.Name)), Type: string(s.Type), SetIdentifier: aws.ToString(s.SetIdentifier),
		TTL: s.TTL, HealthCheckID: aws.ToString(s.HealthCheckId), TrafficPolicyInstanceID: aws.ToString(s.TrafficPolicyInstanceId)}
	what := fmt.Sprintf("record set [name=%s, type=%s", r.Name, r.Type)
	if r.SetIdentifier != "" {
		what += ", set-identifier=" + r.SetIdentifier
	}
	what += "]"
	var policy []string
	if s.Region != "" {
		policy = append(policy, "latency")
	}
	if s.GeoLocation != nil {
		policy = append(policy, "geolocation")
	}
	if s.Failover != "" {
		policy = append(policy, "failover")
	}
	if s.MultiValueAnswer != nil {
		policy = append(policy, "multivalue")
	}
	if s.CidrRoutingConfig != nil {
		policy = append(policy, "IP-based")
	}
	if s.GeoProximityLocation != nil {
		policy = append(policy, "geoproximity")
	}
	switch {
	case s.Weight == nil && len(policy) == 0:
		return r, fmt.Errorf("%s is a simple record, not a weighted one", what)
	case s.Weight == nil:
		return r, fmt.Errorf("%s is a %s record, not a weighted one", what, strings.Join(policy, "/"))
	case len(policy) > 0:
		return r, fmt.Errorf("%s is weighted and %s at once", what, strings.Join(policy, "/"))
	case r.SetIdentifier == "":
		return r, fmt.Errorf("%s is weighted without a SetIdentifier", what)
	}
	r.Weight = *s.Weight
	for _, v := range s.ResourceRecords {
		r.Values = append(r.Values, aws.ToString(v.Value))
	}
	if a := s.AliasTarget; a != nil {
		r.AliasTarget = &AliasTarget{HostedZoneID: aws.ToString(a.HostedZoneId), DNSName: CanonicalName(aws.ToString(a.DNSName)), EvaluateTargetHealth: a.EvaluateTargetHealth}
	}
	return r, nil
}

// sdk is r as the SDK's record set, for a CREATE or a DELETE.
func (r Record) sdk() *types.ResourceRecordSet {
	s := &types.ResourceRecordSet{Name: aws.String(r.Name), Type: types.RRType(r.Type), SetIdentifier: aws.String(r.SetIdentifier),
		Weight: aws.Int64(r.Weight), TTL: r.TTL}
	if r.HealthCheckID != "" {
		s.HealthCheckId = aws.String(r.HealthCheckID)
	}
	if r.TrafficPolicyInstanceID != "" {
		s.TrafficPolicyInstanceId = aws.String(r.TrafficPolicyInstanceID)
	}
	for _, v := range r.Values {
		s.ResourceRecords = append(s.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	if a := r.AliasTarget; a != nil {
		s.AliasTarget = &types.AliasTarget{HostedZoneId: aws.String(a.HostedZoneID), DNSName: aws.String(a.DNSName), EvaluateTargetHealth: a.EvaluateTargetHealth}
	}
	return s
}

// sortRecords orders a region's records by type (then set identifier), for stable digests.
func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.SetIdentifier, b.SetIdentifier)
	})
}

// DecodeKept decodes and checks one region's kept records (from a journal: untrusted): they must
// be records of name, whose set identifier is id, of distinct types, each with either a TTL and
// values or an alias target.
func DecodeKept(b []byte, name, id string) ([]Record, error) {
	var k Kept
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("not the driver's record JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not the driver's record JSON: data after the object")
	}
	if len(k.Records) == 0 {
		return nil, fmt.Errorf("no record in it")
	}
	types := map[string]bool{}
	for i, r := range k.Records {
		at := fmt.Sprintf("record %d", i+1)
		switch {
		case r.Type == "" || strings.ToUpper(r.Type) != r.Type || len(r.Type) > 10:
			return nil, fmt.Errorf("%s: type %q is not a record type", at, r.Type)
		case types[r.Type]:
			return nil, fmt.Errorf("%s: a second %s record", at, r.Type)
		case CanonicalName(r.Name) != name:
			return nil, fmt.Errorf("%s: name %q is not %s", at, r.Name, name)
		case r.SetIdentifier != id:
			return nil, fmt.Errorf("%s: set identifier %q is not %q", at, r.SetIdentifier, id)
		case r.Weight < 0 || r.Weight > MaxWeight:
			return nil, fmt.Errorf("%s: weight %d is outside 0..%d", at, r.Weight, MaxWeight)
		case r.AliasTarget != nil && (r.TTL != nil || len(r.Values) > 0):
			return nil, fmt.Errorf("%s: an alias record with a TTL or values", at)
		case r.AliasTarget == nil && r.TrafficPolicyInstanceID == "" && (r.TTL == nil || len(r.Values) == 0):
			return nil, fmt.Errorf("%s: neither an alias target nor a TTL and values", at)
		case r.TTL != nil && (*r.TTL < 0 || *r.TTL > 2147483647):
			return nil, fmt.Errorf("%s: TTL %d is outside 0..2147483647", at, *r.TTL)
		}
		types[r.Type] = true
		k.Records[i].Name = name
	}
	sortRecords(k.Records)
	return k.Records, nil
}

// encodeKept is a region's records as Kept JSON.
func encodeKept(rs []Record) []byte {
	b, _ := json.Marshal(Kept{Records: rs})
	return b
}
