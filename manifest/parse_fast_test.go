package manifest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"lifeboat/manifest"
)

// tokenDuplicateKeys is the duplicate-key check as it was first written, on the decoder's Token
// API: slow, but plainly right, so it is the oracle the one-pass scanner is compared with.
func tokenDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		switch t {
		case json.Delim('{'):
			keys := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil
				}
				k, _ := kt.(string)
				if keys[k] {
					p := k
					if path != "" {
						p = path + "." + k
					}
					return fmt.Errorf("%s: key %q appears twice", p, k)
				}
				keys[k] = true
				p := k
				if path != "" {
					p = path + "." + k
				}
				if err := walk(p); err != nil {
					return err
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, _ = dec.Token()
		}
		return nil
	}
	return walk("")
}

var dupSeeds = []string{
	`{"a":1,"a":2}`,
	`{"a":1,"\u0061":2}`,
	`{"a\"b":1,"a\u0022b":2}`,
	`{"a\\":1,"a\\\\":2,"a\u005c":3}`,
	"{\"\xff\":1,\"\xfe\":2}",
	`{"é":1,"\u00e9":2}`,
	`{"x":[{"a":1},{"a":2},{"b":[1,{"c":1,"c":2}]}]}`,
	`{"x":{"y":"a","z":"a"},"y":{"x":1}}`,
	`[[],[{}],{"":1,"":2}]`,
	`{"a":"{\"a\":1,\"a\":2}"}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":3}`,
	` { "a" : [ 1 , 2 , { "b" : null , "b" : true } ] } `,
}

// The one-pass duplicate-key check agrees with the Token-based one — verdict and message, the
// path included — on every valid JSON document, and never panics on any input.
func FuzzDuplicateKeys(f *testing.F) {
	for _, s := range dupSeeds {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("testdata/sample-manifest.json"); err == nil {
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"dev.lifeboat.part": "model",`), []byte(`"dev.lifeboat.part": "model", "dev.lifeboat.part": "model",`), 1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := manifest.CheckDuplicateKeys(data)
		if !json.Valid(data) {
			return // judged either way: Parse only asks about what the decoder accepted
		}
		want := tokenDuplicateKeys(data)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: got %v, want %v", data, got, want)
		}
	})
}

// Each seed: the scanner finds exactly the repeats the Token walk finds (a test that runs
// without -fuzz, so that it fails in CI too).
func TestDuplicateKeysSeeds(t *testing.T) {
	n := 0
	for _, s := range dupSeeds {
		got, want := manifest.CheckDuplicateKeys([]byte(s)), tokenDuplicateKeys([]byte(s))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", s, got, want)
		}
		if got != nil && strings.Contains(got.Error(), "appears twice") {
			n++
		}
	}
	if n != len(dupSeeds)-2 { // the string that holds JSON and the object whose values repeat hold none
		t.Errorf("only %d of %d seeds found a repeat", n, len(dupSeeds))
	}
}

// The hand-written digest check accepts exactly what go-digest accepts as a sha256 digest.
func FuzzSHA256Digest(f *testing.F) {
	hex64 := strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{"sha256:" + hex64, "sha256:" + strings.ToUpper(hex64), "sha256:" + hex64[1:], "sha256:" + hex64 + "0",
		"sha512:" + hex64 + hex64, "SHA256:" + hex64, "sha256" + hex64, ":" + hex64, "sha256:" + hex64[:63] + "g", "", "sha256:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := digest.Digest(s)
		want := d.Validate() == nil && d.Algorithm() == digest.SHA256
		if got := manifest.IsSHA256Digest(d); got != want {
			t.Fatalf("%q: %v, go-digest says %v", s, got, want)
		}
	})
}
