package providers

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/iterator"
)

// ErrNoDirs: the store cannot list its top-level directories (a wrapper that does not unwrap).
var ErrNoDirs = errors.New("the store cannot list directories")

// dirLister is what every provider's store can do besides Store: name the "directories" at the
// top of its prefix (S3 and GCS common prefixes, Azure blob prefixes, local subdirectories).
type dirLister interface {
	listDirs(ctx context.Context, max int) ([]string, error)
}

// ListDirs returns the names of the directories at the top of s — the next path element of every
// key, as a listing with delimiter "/" gives them — sorted, at most max (one page; the rest is
// not fetched). It is for suggestions ("prefixes nearby: …"), so it costs one request, not a
// walk of the store. Wrappers are seen through with Unwrap.
func ListDirs(ctx context.Context, s Store, max int) ([]string, error) {
	if max <= 0 {
		max = 1000
	}
	for {
		if d, ok := s.(dirLister); ok {
			names, err := d.listDirs(ctx, max)
			sort.Strings(names)
			return names, err
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, ErrNoDirs
		}
		s = u.Unwrap()
	}
}

// dirName is a listed common prefix relative to the store's prefix, without its trailing "/".
func (k keyspace) dirName(common string) (string, bool) {
	name, ok := strings.CutPrefix(common, k.prefix)
	name = strings.TrimSuffix(name, "/")
	return name, ok && name != "" && validatePath(name) == nil
}

func (s *s3Store) listDirs(ctx context.Context, max int) ([]string, error) {
	page, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.ks.prefix), Delimiter: aws.String("/"), MaxKeys: aws.Int32(int32(max)),
	}, capResponseBody(MaxListPageBytes))
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	var names []string
	for _, p := range page.CommonPrefixes {
		if n, ok := s.ks.dirName(aws.ToString(p.Prefix)); ok {
			names = append(names, n)
		}
	}
	return names, nil
}

func (s *gcsStore) listDirs(ctx context.Context, max int) ([]string, error) {
	q := &storage.Query{Prefix: s.ks.prefix, Delimiter: "/"}
	_ = q.SetAttrSelection([]string{"Name"})
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = max
	var names []string
	for seen := 0; seen < max; seen++ {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return names, s.fail("list", "", err)
		}
		if n, ok := s.ks.dirName(a.Prefix); ok && a.Prefix != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

func (s *azureStore) listDirs(ctx context.Context, max int) ([]string, error) {
	p := s.cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: toPtr(s.ks.prefix), MaxResults: toPtr(int32(max))})
	if !p.More() {
		return nil, nil
	}
	page, err := p.NextPage(ctx)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	var names []string
	for _, bp := range page.Segment.BlobPrefixes {
		if bp.Name == nil {
			continue
		}
		if n, ok := s.ks.dirName(*bp.Name); ok {
			names = append(names, n)
		}
	}
	return names, nil
}

func (s *fileStore) listDirs(ctx context.Context, max int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.root)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	defer f.Close()
	entries, err := f.ReadDir(max)
	if err != nil && len(entries) == 0 {
		return nil, nil // empty directory (io.EOF) or unreadable: nothing to suggest
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && validatePath(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
