package route53

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeKept: the journal's record JSON (untrusted) is decoded without panicking; what is
// accepted is records of the class's name and the region's set identifier that re-encode to
// the same records and convert to the SDK's record sets. Seeds in testdata/fuzz/FuzzDecodeKept.
func FuzzDecodeKept(f *testing.F) {
	f.Add([]byte(`{"records":[{"name":"api.example.com.","type":"A","set_identifier":"euw1","weight":1,"ttl":1,"values":["x"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeKept(b, "api.example.com.", "euw1")
		if err != nil {
			return
		}
		if len(recs) == 0 {
			t.Fatal("accepted without records")
		}
		for _, r := range recs {
			if r.Name != "api.example.com." || r.SetIdentifier != "euw1" || r.Weight < 0 || r.Weight > MaxWeight {
				t.Fatalf("accepted %+v", r)
			}
			s := r.sdk()
			back, err := fromSDK(*s)
			if err != nil {
				t.Fatalf("accepted %+v, which does not convert back: %v", r, err)
			}
			if !reflect.DeepEqual(normalize(back), normalize(r)) {
				t.Fatalf("SDK round trip: %+v → %+v", r, back)
			}
		}
		again, err := DecodeKept(encodeKept(recs), "api.example.com.", "euw1")
		if err != nil || !reflect.DeepEqual(again, recs) {
			j, _ := json.Marshal(recs)
			t.Fatalf("re-encoded %s: %v", j, err)
		}
	})
}

// normalize makes an empty value list nil and the alias name canonical, for comparisons.
func normalize(r Record) Record {
	if len(r.Values) == 0 {
		r.Values = nil
	}
	if r.AliasTarget != nil {
		a := *r.AliasTarget
		a.DNSName = CanonicalName(a.DNSName)
		r.AliasTarget = &a
	}
	return r
}
