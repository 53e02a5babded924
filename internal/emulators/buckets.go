package emulators

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Client is an SDK client on the gateway, for what a Store would never do (planting objects,
// creating buckets).
func (s *S3) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: s.Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// Bucket creates a bucket unless it exists.
func (s *S3) Bucket(ctx context.Context, name string) error {
	_, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
		return fmt.Errorf("create S3 bucket %s: %w", name, err)
	}
	return nil
}

// URL is the s3:// URL of a prefix on this gateway.
func (s *S3) URL(bucket, prefix string) string {
	return fmt.Sprintf("s3://%s/%s?region=%s&endpoint=%s", bucket, prefix, s.Region, url.QueryEscape(s.Endpoint))
}

// Bucket creates a bucket unless it exists.
func (g *GCS) Bucket(name string) {
	g.Server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
}

// Container creates a container unless it exists.
func (a *Azurite) Container(ctx context.Context, name string) error {
	c, err := azblob.NewClientFromConnectionString(a.ConnectionString(a.Key), nil)
	if err == nil {
		_, err = c.CreateContainer(ctx, name, nil)
	}
	if err != nil && !strings.Contains(err.Error(), "ContainerAlreadyExists") {
		return fmt.Errorf("create Azure container %s: %w", name, err)
	}
	return nil
}

// URL is the az:// URL of a prefix in a container of this Azurite (credentials come from
// AZURE_STORAGE_CONNECTION_STRING or the store options).
func (a *Azurite) URL(container, prefix string) string {
	return "az://" + a.Account + "/" + container + "/" + prefix
}
