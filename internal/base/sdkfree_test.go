package base

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// sdkModules are the path prefixes of the cloud SDKs: only the store packages (sdkStores) link
// them, and a program links a store by blank-importing it (cmd/lifeboat/kinds.go).
var sdkModules = []string{
	"github.com/aws/",
	"cloud.google.com/",
	"google.golang.org/api/",
	"github.com/googleapis/gax-go/",
	"github.com/Azure/",
	"oras.land/",
}

// sdkStores are the packages whose kind is a cloud API — the store packages, each registered with
// providers.Register, and the route53 router driver (Route 53 has no API but the SDK's, and the
// driver must speak it exactly: its error types are the driver's conflict signal) — linked only
// by blank import from cmd/lifeboat/kinds.go; the only product packages below cmd that may link
// a cloud SDK.
var sdkStores = []string{"providers/s3", "providers/gcs", "providers/azure", "providers/oci", "failover/routers/route53"}

// depPkg is what the check needs of one `go list -deps` entry.
type depPkg struct {
	ImportPath string
	Deps       []string // every package it links, test files aside
}

// sdkProblems lists, one line each, the product packages below cmd (internal/base, providers and
// its helpers, manifest, verify, failover, drills) other than sdkStores that link a cloud SDK,
// naming the first SDK package and the Lifeboat package through which it comes.
func sdkProblems(pkgs []depPkg) []string {
	var out []string
	for _, p := range pkgs {
		r, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		l := layerOf(r)
		if l < 0 || layers[l] == "cmd" || under(r, "internal") && !under(r, "internal/base") {
			continue
		}
		isStore := false
		for _, s := range sdkStores {
			isStore = isStore || under(r, s)
		}
		if isStore {
			continue
		}
		var sdk, via []string
		for _, d := range p.Deps {
			for _, m := range sdkModules {
				if strings.HasPrefix(d, m) {
					sdk = append(sdk, d)
				}
			}
			if dr, ok := rel(d); ok {
				for _, s := range sdkStores {
					if under(dr, s) {
						via = append(via, dr)
					}
				}
			}
		}
		if len(sdk) == 0 {
			continue
		}
		sort.Strings(sdk)
		msg := fmt.Sprintf("%s links the cloud SDK %s (and %d more SDK packages)", r, sdk[0], len(sdk)-1)
		if len(via) > 0 {
			sort.Strings(via)
			msg += fmt.Sprintf(" through %s", strings.Join(via, ", "))
		}
		out = append(out, msg+": only the store packages link an SDK; open stores with providers.Open, and blank-import the stores in cmd or in _test.go files")
	}
	sort.Strings(out)
	return out
}

// TestSDKFree fails when package providers, manifest/... or any other product package below cmd
// (the store packages aside) links a cloud SDK: one import of a store package from them would
// link every SDK into tools that need none (manifest lint, the layers above providers).
func TestSDKFree(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Deps", module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []depPkg
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p depPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
		seen[p.ImportPath] = true
	}
	for _, must := range []string{"providers", "manifest", "manifest/lint"} {
		if !seen[module+"/"+must] {
			t.Fatalf("go list did not list %s: wrong directory?", must)
		}
	}
	for _, v := range sdkProblems(pkgs) {
		t.Error(v)
	}
}

// TestSDKFreeCatches proves the check fails on an SDK linked directly or through a store package,
// and lets the store packages and cmd link them.
func TestSDKFreeCatches(t *testing.T) {
	cases := []struct {
		name string
		pkg  depPkg
		want string // substring of the one problem; "" for none
	}{
		{"providers links aws", depPkg{"lifeboat/providers", []string{"github.com/aws/aws-sdk-go-v2/aws"}}, "providers links the cloud SDK github.com/aws/aws-sdk-go-v2/aws"},
		{"manifest through a store", depPkg{"lifeboat/manifest/lint", []string{"lifeboat/providers/gcs", "cloud.google.com/go/storage"}}, "through providers/gcs"},
		{"verify links oras", depPkg{"lifeboat/verify/replicate", []string{"oras.land/oras-go/v2"}}, "verify/replicate links"},
		{"base links azure", depPkg{"lifeboat/internal/base/kubeclient", []string{"github.com/Azure/azure-sdk-for-go/sdk/azcore"}}, "internal/base/kubeclient links"},
		{"store links its SDK", depPkg{"lifeboat/providers/s3", []string{"github.com/aws/aws-sdk-go-v2/service/s3"}}, ""},
		{"cmd links all", depPkg{"lifeboat/cmd/lifeboat", []string{"lifeboat/providers/s3", "github.com/aws/aws-sdk-go-v2/service/s3"}}, ""},
		{"test helper links all", depPkg{"lifeboat/internal/testbed", []string{"lifeboat/providers/s3", "github.com/aws/aws-sdk-go-v2/service/s3"}}, ""},
		{"manifest with plain OCI types", depPkg{"lifeboat/manifest", []string{"github.com/opencontainers/image-spec/specs-go/v1", "k8s.io/client-go/rest"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantOne(t, "problem", sdkProblems([]depPkg{tc.pkg}), tc.want)
		})
	}
}
