//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/opencontainers/go-digest"

	"lifeboat/fleet"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest/signature"
)

// testKey is a key pair written as PEM files: priv (PKCS#8) and pub (PKIX).
type testKey struct{ priv, pub, id string }

func writeKey(t *testing.T, dir, name string, key any) testKey {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(s.Public())
	k := testKey{priv: filepath.Join(dir, name+".key"), pub: filepath.Join(dir, name+".pub"), id: s.KeyID()}
	os.WriteFile(k.priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(k.pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
	return k
}

func testKeys(t *testing.T) (trusted, other testKey) {
	dir := t.TempDir()
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return writeKey(t, dir, "release", ed), writeKey(t, dir, "other", ec)
}

func noKeyMaterial(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, "PRIVATE KEY") || strings.Contains(r.stdout+r.stderr, "BEGIN") {
		t.Fatalf("key material in the output:\n%s%s", r.stdout, r.stderr)
	}
}

// A manifest file signed by the binary: verify-sig accepts the signer's public key (exit 0),
// names the signer's key id when given another key (exit 1), sees a changed manifest (exit 1),
// and takes bad input as such (exit 2). restore --key refuses (exit 3) what verify-sig rejects.
func TestManifestSignVerifyFile(t *testing.T) {
	trusted, other := testKeys(t)
	l, m := fixture(t, sample.Options{})

	r := cli(t, nil, "manifest", "verify-sig", m, "--key", trusted.pub)
	if r.code != 1 || !strings.Contains(r.stdout, "no signature found") {
		t.Fatalf("unsigned: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "manifest", "sign", m, "--key", trusted.priv)
	noKeyMaterial(t, r)
	if r.code != 0 || !strings.Contains(r.stdout, trusted.id) || !strings.Contains(r.stdout, m+".sigstore.json") {
		t.Fatalf("sign: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "manifest", "verify-sig", m, "--key", trusted.pub, "-o", "json")
	var v struct {
		Valid bool   `json:"valid"`
		KeyID string `json:"key_id"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || !v.Valid || v.KeyID != trusted.id {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// an unaccepted key: exit 1, naming the key id the signature is by and the accepted one
	r = cli(t, nil, "manifest", "verify-sig", m, "--key", other.pub)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, trusted.id) || !strings.Contains(r.stdout+r.stderr, other.id) {
		t.Fatalf("other key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// either key of a rotation
	if r := cli(t, nil, "manifest", "verify-sig", m, "--key", other.pub, "--key", trusted.pub); r.code != 0 {
		t.Fatalf("rotation: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	to := filepath.Join(t.TempDir(), "restored")
	if r := cli(t, nil, "restore", "--manifest", m, "--from", l.Root, "--to", to, "--key", trusted.pub); r.code != 0 {
		t.Fatalf("restore of a signed manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// tampered: one more byte, still a valid manifest
	raw, _ := os.ReadFile(m)
	os.WriteFile(m, append(raw, '\n'), 0o644)
	r = cli(t, nil, "manifest", "verify-sig", m, "--key", trusted.pub)
	if r.code != 1 || !strings.Contains(r.stdout, "changed after signing") {
		t.Fatalf("tampered: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "restore", "--manifest", m, "--from", l.Root, "--to", filepath.Join(t.TempDir(), "r2"), "--key", trusted.pub)
	if r.code != 3 || !strings.Contains(r.stderr, "restore refused") || !strings.Contains(r.stderr, trusted.id) || !strings.Contains(r.stderr, "lifeboat manifest verify-sig") {
		t.Fatalf("restore of a tampered manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"manifest", "sign", m, "--key", trusted.pub}, "is a public key"},
		{[]string{"manifest", "sign", m}, "needs --key"},
		{[]string{"manifest", "sign", trusted.pub, "--key", trusted.priv}, "not a DR manifest"},
		{[]string{"manifest", "verify-sig", m, "--key", trusted.priv}, "is a private key"},
		{[]string{"manifest", "verify-sig", m}, "--key PUB"},
		{[]string{"manifest", "verify-sig", m + ".absent", "--key", trusted.pub}, "absent"},
	} {
		r := cli(t, nil, c.args...)
		noKeyMaterial(t, r)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("%v: exit %d, want 2 with %q\n%s%s", c.args, r.code, c.want, r.stdout, r.stderr)
		}
	}
}

// A manifest in a bucket (S3, versitygw): the signature is an object beside it.
func TestManifestSignVerifyBucket(t *testing.T) {
	gw := emulators.SharedVersityGW(t)
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	trusted, other := testKeys(t)
	_, m := fixture(t, sample.Options{})
	bucket := "sign-" + strings.ToLower(digest.FromString(t.Name()).Encoded()[:8])
	if err := gw.Bucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(m)
	if _, err := gw.Client().PutObject(context.Background(), putInput(bucket, "dr/manifest.json", raw)); err != nil {
		t.Fatal(err)
	}
	obj := gw.URL(bucket, "dr/manifest.json")
	if r := cli(t, env, "manifest", "sign", obj, "--key", trusted.priv); r.code != 0 || !strings.Contains(r.stdout, "dr/manifest.json.sigstore.json") {
		t.Fatalf("sign: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, env, "manifest", "verify-sig", obj, "--key", trusted.pub); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, env, "manifest", "verify-sig", obj, "--key", other.pub); r.code != 1 || !strings.Contains(r.stdout, trusted.id) {
		t.Fatalf("other key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// replaced in the bucket by whoever can write it: the signature no longer matches
	if _, err := gw.Client().PutObject(context.Background(), putInput(bucket, "dr/manifest.json", append(raw, ' '))); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, env, "manifest", "verify-sig", obj, "--key", trusted.pub); r.code != 1 || !strings.Contains(r.stdout, "changed after signing") {
		t.Fatalf("replaced: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A fleet with trust: — restore, boot, failover run and drill run refuse (exit 3) a manifest
// with no signature and one signed by a key the fleet does not accept, naming the key ids found
// and the next command; check reports it (exit 1). Signed by the accepted key, restore and check
// pass and the drill runs, its report's evidence signed and verified.
func TestFleetTrustRefusals(t *testing.T) {
	trusted, other := testKeys(t)
	drill := drillFleet(t, "60s")
	dir := filepath.Dir(drill)
	fleetFile := filepath.Join(dir, "fleet.yaml")
	fb, _ := os.ReadFile(fleetFile)
	os.WriteFile(fleetFile, append(fb, []byte("trust:\n  keys: ["+trusted.pub+"]\n")...), 0o644)
	fl, err := fleet.Read(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	m := fl.Model.Manifest
	weights, _ := os.ReadFile(filepath.Join(dir, "weights.json"))

	refusals := func(found string) {
		t.Helper()
		for _, args := range [][]string{
			{"restore", "--fleet", fleetFile, "--from", fl.Regions["us-east-1"].Replica, "--to", filepath.Join(t.TempDir(), "r")},
			{"boot", "--fleet", fleetFile, "--region", "us-east-1"},
			{"failover", "run", "--fleet", fleetFile, "--evacuate", "eu-west-1", "--yes", "--reason", "test"},
			{"drill", "run", drill, "--approve-all"},
		} {
			r := cli(t, nil, args...)
			if r.code != 3 || !strings.Contains(r.stderr, "refused") || !strings.Contains(r.stderr, found) || !strings.Contains(r.stderr, trusted.id) ||
				!strings.Contains(r.stderr, "lifeboat manifest verify-sig") {
				t.Fatalf("%v: exit %d, want 3 naming %s\n%s%s", args, r.code, found, r.stdout, r.stderr)
			}
		}
		if w, _ := os.ReadFile(filepath.Join(dir, "weights.json")); string(w) != string(weights) {
			t.Fatal("a refused command moved traffic")
		}
		r := cli(t, nil, "check", "--fleet", fleetFile)
		if r.code != 1 || !strings.Contains(r.stdout, "Trust: FAIL") || !strings.Contains(r.stdout, found) {
			t.Fatalf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	refusals("signatures found: none")
	if r := cli(t, nil, "manifest", "sign", m, "--key", other.priv); r.code != 0 {
		t.Fatalf("sign: %s", r.stderr)
	}
	refusals("by key " + other.id)

	if r := cli(t, nil, "manifest", "sign", m, "--key", trusted.priv); r.code != 0 {
		t.Fatalf("sign: %s", r.stderr)
	}
	if r := cli(t, nil, "manifest", "verify-sig", "--fleet", fleetFile); r.code != 0 {
		t.Fatalf("verify-sig --fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := cli(t, nil, "check", "--fleet", fleetFile, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"key_id": "`+trusted.id) {
		t.Fatalf("check of a signed manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, nil, "restore", "--fleet", fleetFile, "--from", fl.Regions["us-east-1"].Replica, "--to", filepath.Join(t.TempDir(), "r")); r.code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// the drill runs, and its evidence is signed with the operator's key
	out := filepath.Join(dir, "report")
	r = cli(t, nil, "drill", "run", drill, "--approve-all", "--report", out, "--sign-key", other.priv)
	noKeyMaterial(t, r)
	if r.code != 0 || !strings.Contains(r.stderr, "report signed with key "+other.id) {
		t.Fatalf("drill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	report := filepath.Join(out, "report.json")
	if r := cli(t, nil, "manifest", "verify-sig", report, "--key", other.pub); r.code != 0 {
		t.Fatalf("verify-sig report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rb, _ := os.ReadFile(report)
	if !strings.Contains(string(rb), "lose-eu-west-1") {
		t.Fatalf("report.json does not name the drill:\n%s", rb)
	}
	edited := filepath.Join(out, "edited.json")
	os.WriteFile(edited, []byte(strings.Replace(string(rb), "lose-eu-west-1", "lose-eu-west-2", 1)), 0o644)
	os.WriteFile(edited+".sigstore.json", mustRead(t, report+".sigstore.json"), 0o644)
	if r := cli(t, nil, "manifest", "verify-sig", edited, "--key", other.pub); r.code != 1 {
		t.Fatalf("verify-sig of an edited report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if cosign := cosignPath(t, false); cosign != "" {
		if r := cosignRun(t, cosign, nil, "verify-blob", "--key", other.pub, "--bundle", report+".sigstore.json", "--insecure-ignore-tlog", report); r.code != 0 {
			t.Fatalf("cosign verify-blob of the report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}

	// the manifest replaced after signing: refused again
	raw, _ := os.ReadFile(m)
	os.WriteFile(m, append(raw, '\n'), 0o644)
	r = cli(t, nil, "restore", "--fleet", fleetFile, "--from", fl.Regions["us-east-1"].Replica, "--to", filepath.Join(t.TempDir(), "r"))
	if r.code != 3 || !strings.Contains(r.stderr, "changed after signing") {
		t.Fatalf("restore of a replaced manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putInput(bucket, key string, data []byte) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}
}

// A manifest in a real registry (distribution, basic auth, no referrers API): the signature is
// attached as an OCI 1.1 referrer through the referrers tag (sha256-<hex>), which oras — an
// independent client — reads back; verify-sig and restore --key accept it for the accepted key
// and refuse (exit 1, exit 3) another key and a manifest replaced under the tag.
func TestManifestSignVerifyRegistry(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	oras, err := emulators.OrasPath()
	if err != nil {
		emulators.Unavailable(t, err)
	}
	cfgDir := emulators.DockerConfig(t, reg)
	env := []string{"DOCKER_CONFIG=" + cfgDir}
	trusted, other := testKeys(t)
	l, m := fixture(t, sample.Options{})
	raw := mustRead(t, m)
	ref := reg.Host + "/lifeboat/sign-" + strings.ToLower(digest.FromString(t.Name()).Encoded()[:8])
	target := "oci://" + ref + ":v1"
	if r := cli(t, env, "manifest", "push", m, "--from", l.Root, target); r.code != 0 {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, env, "manifest", "verify-sig", target, "--key", trusted.pub); r.code != 1 || !strings.Contains(r.stdout, "no signature found") {
		t.Fatalf("unsigned: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := cli(t, env, "manifest", "sign", target, "--key", trusted.priv)
	if r.code != 0 || !strings.Contains(r.stdout, "referrer sha256:") || strings.Contains(r.stdout+r.stderr, reg.Password) {
		t.Fatalf("sign: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// oras finds the referrer under the tag schema and fetches the bundle byte for byte
	mdig := digest.FromBytes(raw)
	idx := orasOut(t, oras, cfgDir, "manifest", "fetch", ref+":sha256-"+mdig.Encoded())
	var index struct {
		Manifests []struct {
			Digest       string `json:"digest"`
			ArtifactType string `json:"artifactType"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(idx, &index); err != nil || len(index.Manifests) != 1 || index.Manifests[0].ArtifactType != signature.MediaType {
		t.Fatalf("referrers tag index %v:\n%s", err, idx)
	}
	var sigManifest struct {
		Subject struct {
			Digest string `json:"digest"`
		} `json:"subject"`
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(orasOut(t, oras, cfgDir, "manifest", "fetch", ref+"@"+index.Manifests[0].Digest), &sigManifest); err != nil || sigManifest.Subject.Digest != mdig.String() || len(sigManifest.Layers) != 1 {
		t.Fatalf("signature manifest %v: %+v", err, sigManifest)
	}
	bundle := orasOut(t, oras, cfgDir, "blob", "fetch", "--output", "-", ref+"@"+sigManifest.Layers[0].Digest)
	if signature.ClaimedKeyID(bundle) != trusted.id {
		t.Fatalf("the bundle in the registry claims key %s, want %s", signature.ClaimedKeyID(bundle), trusted.id)
	}

	for _, byDigest := range []string{target, "oci://" + ref + "@" + mdig.String()} {
		if r := cli(t, env, "manifest", "verify-sig", byDigest, "--key", trusted.pub); r.code != 0 || !strings.Contains(r.stdout, trusted.id) {
			t.Fatalf("verify %s: exit %d\n%s%s", byDigest, r.code, r.stdout, r.stderr)
		}
	}
	if r := cli(t, env, "manifest", "verify-sig", target, "--key", other.pub); r.code != 1 || !strings.Contains(r.stdout, trusted.id) {
		t.Fatalf("other key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	restore := func(key string) result {
		return cli(t, env, "restore", "--manifest", "oci://"+ref+"@"+mdig.String(), "--from", target, "--to", filepath.Join(t.TempDir(), "r"), "--key", key)
	}
	if r := restore(other.pub); r.code != 3 || !strings.Contains(r.stderr, "by key "+trusted.id) || !strings.Contains(r.stderr, "lifeboat manifest verify-sig") {
		t.Fatalf("restore, unaccepted signer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := restore(trusted.pub); r.code != 0 {
		t.Fatalf("restore, accepted signer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// a second signature (a rotation): both referrers are kept
	if r := cli(t, env, "manifest", "sign", target, "--key", other.priv); r.code != 0 {
		t.Fatalf("second sign: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, env, "manifest", "verify-sig", target, "--key", other.pub, "-o", "json"); r.code != 0 || strings.Count(r.stdout, `"where": "referrer`) != 2 {
		t.Fatalf("after a second signature: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// whoever can push replaces the manifest under the tag: its digest has no signature
	tampered := filepath.Join(t.TempDir(), "manifest.json")
	os.WriteFile(tampered, append(raw, '\n'), 0o644)
	if r := cli(t, env, "manifest", "push", tampered, "--from", l.Root, target); r.code != 0 {
		t.Fatalf("push of the replacement: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, env, "manifest", "verify-sig", target, "--key", trusted.pub); r.code != 1 || !strings.Contains(r.stdout, "no signature found") {
		t.Fatalf("replaced manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func orasOut(t *testing.T, oras, cfgDir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(oras, append(args, "--plain-http", "--registry-config", filepath.Join(cfgDir, "config.json"))...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("oras %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}
