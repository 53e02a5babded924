// Command democlouds runs three local "clouds" for `make demo` — versitygw (S3), Azurite (Azure
// Blob) and fake-gcs-server (GCS, in-process), a local directory standing in for a missing one —
// and writes their replica URLs and throwaway credentials for the demo. Demo-only.
//
// It creates one bucket or container in each, writes the replica URLs and the emulators' throwaway
// credentials as shell assignments to -env (mode 0600; the demo sources it, never prints it), and
// runs until it gets SIGINT or SIGTERM, or until the process -watch-pid names has exited (make,
// so that a failed demo step does not leave emulators behind). Nothing shipped uses it.
package main
