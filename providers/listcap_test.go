package providers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/providers"
)

// hostileS3 answers every listing with the page body writes and counts the listing requests.
func hostileS3(t *testing.T, maxEntries int, page func(w http.ResponseWriter, r *http.Request)) (providers.Store, *int) {
	t.Helper()
	lists := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") != "2" {
			http.Error(w, "not here", http.StatusNotImplemented)
			return
		}
		lists++
		w.Header().Set("Content-Type", "application/xml")
		page(w, r)
	}))
	t.Cleanup(srv.Close)
	o := providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider("AKIDHOSTILE", "secret", ""),
		Retry: providers.RetryOptions{MaxAttempts: 1}, MaxListEntries: maxEntries}
	s, err := providers.Open(context.Background(), "s3://bucket/prefix?region=us-east-1&endpoint="+srv.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &lists
}

const listHead = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>prefix/</Prefix>`

// TestS3ListingPageIsCapped: issue 9 item 3. An S3 endpoint that answers a listing with a page
// that never ends (verify reached 2.5 GB) fails the listing with ErrListTooLarge once the page
// passes MaxListPageBytes.
func TestS3ListingPageIsCapped(t *testing.T) {
	s, _ := hostileS3(t, 0, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(listHead + `<IsTruncated>false</IsTruncated>`))
		entry := []byte(`<Contents><Key>prefix/model/x</Key><Size>1</Size><ETag>"e"</ETag></Contents>`)
		for r.Context().Err() == nil {
			if _, err := w.Write(entry); err != nil {
				return
			}
		}
	})
	err := s.List(context.Background(), "", func(providers.Object) error { return nil })
	if !errors.Is(err, providers.ErrListTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(providers.MaxListPageBytes)) {
		t.Fatalf("List = %v, want ErrListTooLarge naming the page cap", err)
	}
}

// TestListingEntriesAreCapped: every store's listing stops at Options.MaxListEntries with
// ErrListTooLarge — here an S3 endpoint whose pages go on forever (each one truncated, with a
// continuation token: the old code listed without end).
func TestListingEntriesAreCapped(t *testing.T) {
	s, lists := hostileS3(t, 4500, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, listHead+`<IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken>`, len(r.URL.Query().Get("continuation-token")))
		for i := range 1000 {
			fmt.Fprintf(w, `<Contents><Key>prefix/model/%s-%d</Key><Size>1</Size><ETag>"e"</ETag></Contents>`, r.URL.Query().Get("continuation-token"), i)
		}
		w.Write([]byte(`</ListBucketResult>`))
	})
	n := 0
	err := s.List(context.Background(), "", func(providers.Object) error { n++; return nil })
	if !errors.Is(err, providers.ErrListTooLarge) || n != 4500 {
		t.Fatalf("S3 List = %v after %d entries (%d pages), want ErrListTooLarge after %d", err, n, *lists, 4500)
	}
}

// TestFileListingEntriesAreCapped: the same cap on a local directory.
func TestFileListingEntriesAreCapped(t *testing.T) {
	dir := t.TempDir()
	for i := range 11 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), nil, 0o644)
	}
	fs, _ := providers.NewFileStore(dir, providers.Options{MaxListEntries: 10})
	if err := fs.List(context.Background(), "", func(providers.Object) error { return nil }); !errors.Is(err, providers.ErrListTooLarge) {
		t.Fatalf("file List = %v, want ErrListTooLarge", err)
	}
}
