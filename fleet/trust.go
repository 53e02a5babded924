package fleet

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"lifeboat/manifest/signature"
)

// Trust is the fleet's trust: section — the public keys whose signature on the DR manifest the
// fleet accepts. With Require (the default when keys are listed), restore, boot, failover run
// and drill run refuse a manifest that no accepted key signed, and check reports it as a gap;
// require: false only reports (a rollout of signing, before every manifest is signed).
//
//	trust:
//	  keys:
//	    - keys/release.pub          # a PEM public key file, relative to the fleet file
//	    - keys/release-2027.pub     # during a rotation: the old and the new key
//	  require: true
type Trust struct {
	Keys    []*signature.PublicKey `json:"keys"`
	Require bool                   `json:"require"`
}

// KeyIDs lists the accepted keys' ids.
func (t *Trust) KeyIDs() []string {
	ids := make([]string, 0, len(t.Keys))
	for _, k := range t.Keys {
		ids = append(ids, k.ID)
	}
	return ids
}

func (p *fleetParser) trust(f *Fleet, n *yaml.Node, at string) {
	t := &Trust{Require: true}
	seen := map[string]bool{}
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"require": func(n *yaml.Node, at string) { t.Require = p.boolean(n, at) },
		"keys": func(n *yaml.Node, at string) {
			if n.Kind != yaml.SequenceNode {
				p.errf(n.Line, at, "want a list of public key files (PEM), got %s", kindName(n))
				return
			}
			for i, c := range n.Content {
				iat := fmt.Sprintf("%s[%d]", at, i)
				s := p.str(c, iat, true)
				if s == "" {
					continue
				}
				var k *signature.PublicKey
				var err error
				if strings.Contains(s, "-----BEGIN") {
					k, err = signature.ParsePublicKey([]byte(s), "inline PEM") // errf names the field
				} else {
					if strings.Contains(s, "://") {
						p.errf(c.Line, iat, "want a local PEM public key file, got the URL %q", s)
						continue
					}
					if !filepath.IsAbs(s) {
						s = filepath.Join(p.dir, s)
					}
					k, err = signature.LoadPublicKey(filepath.Clean(s))
				}
				if err != nil {
					p.errf(c.Line, iat, "%v", err)
					continue
				}
				if seen[k.ID] {
					p.errf(c.Line, iat, "key %s is listed twice", k.ID)
					continue
				}
				seen[k.ID] = true
				t.Keys = append(t.Keys, k)
			}
		},
	})
	if len(t.Keys) == 0 && !p.Failed() {
		p.errf(n.Line, at+".keys", "at least one accepted public key is required (a PEM file: cosign public-key --key cosign.key > release.pub)")
	}
	f.Trust = t
}
