package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"lifeboat/internal/emulators"
)

// bucket is the bucket (S3, GCS) or container (Azure) every replica of the bench lives in.
const bucket = "lifeboat-bench"

// cloud is one emulator with a bucket in it, and how lifeboat and rclone reach it.
type cloud struct {
	name     string // S3, GCS, Azure
	emulator string // what serves it, for the output
	remote   string // rclone remote name (configured through RCLONE_CONFIG_<REMOTE>_*)
	url      func(prefix string) string
	onDisk   string // S3: where versitygw keeps the bucket's objects as files
	emuName  string // its key in watched
}

// clouds are the three emulators the verify sections run against, all on loopback.
type clouds struct {
	list []cloud
	// lifeboatEnv and rcloneEnv hold the throwaway emulator credentials; they are passed to the
	// child processes only and never printed (secrets redacts them from captured output).
	lifeboatEnv []string
	rcloneEnv   []string
	secrets     redactor
	stops       []func()
	// The emulators themselves, for wanClouds.
	s3  *emulators.S3
	gcs *emulators.GCS
	az  *emulators.Azurite
}

func (c *clouds) stop() {
	for i := len(c.stops) - 1; i >= 0; i-- {
		c.stops[i]()
	}
	c.stops = nil
}

func (c *clouds) byName(name string) cloud {
	for _, cl := range c.list {
		if cl.name == name {
			return cl
		}
	}
	return cloud{}
}

// startClouds starts versitygw (S3) with its posix root under dir/versitygw, kept between runs so
// that the ≥ 1 GB deep-verify replica is uploaded once; Azurite (Azure) under dir/azurite, fresh;
// and fake-gcs-server (GCS) in this process, in memory. Each gets the bench bucket. On error,
// whatever was started is stopped.
func startClouds(ctx context.Context, dir string) (_ *clouds, err error) {
	c := &clouds{}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rcloneConfig := filepath.Join(dir, "rclone.conf") // empty: every remote comes from the environment
	if err := os.WriteFile(rcloneConfig, nil, 0o600); err != nil {
		return nil, err
	}
	c.rcloneEnv = append(c.rcloneEnv, "RCLONE_CONFIG="+rcloneConfig)

	// S3: versitygw.
	gw, err := emulators.StartVersityGW(filepath.Join(dir, "versitygw"))
	if err != nil {
		return nil, fmt.Errorf("versitygw (S3): %w", err)
	}
	c.stops = append(c.stops, gw.Stop)
	c.s3 = gw
	watched["versitygw"] = findPID("--port", strings.TrimPrefix(gw.Endpoint, "http://"))
	if err := gw.Bucket(ctx, bucket); err != nil {
		return nil, err
	}
	c.secrets = append(c.secrets, gw.SecretKey)
	c.lifeboatEnv = append(c.lifeboatEnv, "AWS_ACCESS_KEY_ID="+gw.AccessKey, "AWS_SECRET_ACCESS_KEY="+gw.SecretKey)
	c.rcloneEnv = append(c.rcloneEnv,
		"RCLONE_CONFIG_LBS3_TYPE=s3", "RCLONE_CONFIG_LBS3_PROVIDER=Other",
		"RCLONE_CONFIG_LBS3_ENDPOINT="+gw.Endpoint, "RCLONE_CONFIG_LBS3_REGION="+gw.Region,
		"RCLONE_CONFIG_LBS3_ACCESS_KEY_ID="+gw.AccessKey, "RCLONE_CONFIG_LBS3_SECRET_ACCESS_KEY="+gw.SecretKey,
		"RCLONE_CONFIG_LBS3_FORCE_PATH_STYLE=true")
	c.list = append(c.list, cloud{name: "S3", emulator: "versitygw " + gw.Endpoint, remote: "lbs3",
		onDisk: filepath.Join(gw.Dir, bucket), emuName: "versitygw",
		url: func(prefix string) string {
			return gw.URL(bucket, prefix)
		}})

	// GCS: fake-gcs-server, in this process.
	g, err := emulators.StartFakeGCS(nil)
	if err != nil {
		return nil, fmt.Errorf("fake-gcs-server (GCS): %w", err)
	}
	c.stops = append(c.stops, g.Stop)
	c.gcs = g
	watched["fake-gcs-server"] = 0 // this process
	g.Bucket(bucket)
	c.lifeboatEnv = append(c.lifeboatEnv, "STORAGE_EMULATOR_HOST="+g.Host)
	c.rcloneEnv = append(c.rcloneEnv,
		"RCLONE_CONFIG_LBGCS_TYPE=google cloud storage", "RCLONE_CONFIG_LBGCS_ANONYMOUS=true",
		"RCLONE_CONFIG_LBGCS_ENDPOINT=http://"+g.Host+"/storage/v1/")
	c.list = append(c.list, cloud{name: "GCS", emuName: "fake-gcs-server", emulator: "fake-gcs-server http://" + g.Host + " (in the bench process, in memory)",
		remote: "lbgcs", url: func(prefix string) string { return "gs://" + bucket + "/" + prefix }})

	// Azure: Azurite, fresh.
	azDir := filepath.Join(dir, "azurite")
	if err := os.RemoveAll(azDir); err != nil {
		return nil, err
	}
	az, err := emulators.StartAzurite(azDir)
	if err != nil {
		return nil, fmt.Errorf("azurite (Azure): %w", err)
	}
	c.stops = append(c.stops, az.Stop)
	c.az = az
	if u, err := url.Parse(az.Endpoint); err == nil {
		watched["Azurite"] = findPID("--blobPort", u.Port())
	}
	if err := az.Container(ctx, bucket); err != nil {
		return nil, err
	}
	cs := az.ConnectionString(az.Key)
	c.secrets = append(c.secrets, az.Key)
	c.lifeboatEnv = append(c.lifeboatEnv, "AZURE_STORAGE_CONNECTION_STRING="+cs)
	c.rcloneEnv = append(c.rcloneEnv,
		"RCLONE_CONFIG_LBAZ_TYPE=azureblob", "RCLONE_CONFIG_LBAZ_ACCOUNT="+az.Account,
		"RCLONE_CONFIG_LBAZ_KEY="+az.Key, "RCLONE_CONFIG_LBAZ_ENDPOINT="+az.Endpoint)
	c.list = append(c.list, cloud{name: "Azure", emuName: "Azurite", emulator: "Azurite " + az.Endpoint, remote: "lbaz",
		url: func(prefix string) string { return "az://" + az.Account + "/" + bucket + "/" + prefix }})
	return c, nil
}

// rclonePath is the remote path rclone gives the same prefix lifeboat's URL names.
func (cl cloud) rclonePath(prefix string) string { return cl.remote + ":" + bucket + "/" + prefix }
