package verify

import (
	"errors"
	"fmt"
	"strings"

	"lifeboat/providers"
	"lifeboat/providers/checksum"
)

// Status is the verdict on one file of one replica. Quick verification compares metadata only;
// deep verification re-reads every byte. A file is never OK unless something was compared.
type Status string

const (
	StatusOK               Status = "OK"                // present, size equal, a full-object checksum (quick) or every byte (deep) equal
	StatusMissing          Status = "MISSING"           // listed in the manifest, absent from the replica
	StatusSizeMismatch     Status = "SIZE_MISMATCH"     // present with another size
	StatusChecksumMismatch Status = "CHECKSUM_MISMATCH" // a native full-object checksum differs (quick)
	StatusUnverified       Status = "UNVERIFIED"        // present, same size, no comparable native checksum
	StatusCorrupt          Status = "CORRUPT"           // deep: the bytes hash to something else
	StatusExtra            Status = "EXTRA"             // in the replica, not in the manifest (a warning)
	StatusError            Status = "ERROR"             // could not be checked (permission, read failure after retries)
)

// Failed reports whether the status fails a verify (a problem found).
func (s Status) Failed() bool {
	switch s {
	case StatusMissing, StatusSizeMismatch, StatusChecksumMismatch, StatusCorrupt:
		return true
	}
	return false
}

// ReplicaStatus sums up one replica.
type ReplicaStatus string

const (
	ReplicaOK          ReplicaStatus = "OK"          // every file OK (EXTRA files allowed)
	ReplicaFailed      ReplicaStatus = "FAILED"      // at least one file failed
	ReplicaUnverified  ReplicaStatus = "UNVERIFIED"  // nothing failed, but something was not proven
	ReplicaUnreachable ReplicaStatus = "UNREACHABLE" // the store stayed unreachable after retries (or --timeout)
	// The replica could not be checked because of what the user must fix (bad input, no retry helps):
	ReplicaNotFound      ReplicaStatus = "NOT_FOUND"     // no such bucket, container or directory
	ReplicaDenied        ReplicaStatus = "DENIED"        // credentials or operation refused
	ReplicaMisconfigured ReplicaStatus = "MISCONFIGURED" // no credentials, no region, a host that does not exist
	ReplicaError         ReplicaStatus = "ERROR"         // could not be checked for another reason
)

// Facts are what is known of a file: expected (from the manifest) or actual (from the replica).
// Checksums are in the manifest's encodings. Only what was seen is set.
type Facts struct {
	Size *int64 `json:"size,omitempty"`
	checksum.Sums
	// Source says where actual facts came from: "listing", "stat" or "read".
	Source string `json:"source,omitempty"`
}

// FileResult is the verdict on one file of one replica.
type FileResult struct {
	Path     string `json:"path"`
	Status   Status `json:"status"`
	Expected Facts  `json:"expected"`
	Actual   Facts  `json:"actual"`
	// Detail explains the verdict in one line: which checksum was compared, or why none could be.
	Detail string `json:"detail,omitempty"`
}

// ReplicaResult is the verdict on one replica.
type ReplicaResult struct {
	// Region names the fleet region whose replica this is, when the caller verified a fleet's
	// replicas (check); URL is then the replica's URL alone.
	Region string         `json:"region,omitempty"`
	URL    string         `json:"url"`
	Status ReplicaStatus  `json:"status"`
	Counts map[Status]int `json:"counts"`
	Files  []FileResult   `json:"files"`
	// Error is set when the replica, or some of its files, could not be checked (UNREACHABLE,
	// permission, missing bucket); it names the store, never a credential.
	Error string `json:"error,omitempty"`
	// ErrorKind classifies Error with providers.KindOf: "unreachable" (network, 5xx, throttling
	// after the SDK's retries), "timeout" (--timeout), "denied" (credentials refused),
	// "misconfigured" (no credentials, region or such host), "not_found" (no such bucket,
	// container or directory), "canceled" (interrupted) or "other".
	ErrorKind ErrorKind `json:"error_kind,omitempty"`
	// Err is the first error behind Error, for errors.Is (providers.ErrPermission…).
	Err error `json:"-"`
	// Warnings are things worth knowing that fail nothing (objects with invalid names skipped by
	// the listing, native checksums that disagree with bytes that are right).
	Warnings []string `json:"warnings,omitempty"`
	// Diagnosis, when every file of the manifest is MISSING, says what the prefix holds instead
	// (a model repository given for a bundle, a bundle one level down, nothing at all).
	Diagnosis string `json:"diagnosis,omitempty"`
	// Fix, for a replica with failed files, is the command that repairs it from a replica that
	// did not fail (lifeboat replicate …), set by the caller that knows how the replicas were
	// named; "" when no replica holds a copy to repair from.
	Fix string `json:"fix,omitempty"`
	// BytesRead is how many content bytes a deep verification read and hashed.
	BytesRead int64 `json:"bytes_read,omitempty"`
	// Seconds is the wall time the replica took.
	Seconds float64 `json:"seconds"`
}

// ErrorKind classifies why a replica or file could not be checked.
type ErrorKind string

const (
	ErrorUnreachable   ErrorKind = ErrorKind(providers.KindUnreachable)
	ErrorTimeout       ErrorKind = ErrorKind(providers.KindTimeout)
	ErrorPermission    ErrorKind = ErrorKind(providers.KindDenied)
	ErrorMisconfigured ErrorKind = ErrorKind(providers.KindMisconfigured)
	ErrorNotFound      ErrorKind = ErrorKind(providers.KindNotFound)
	ErrorCanceled      ErrorKind = ErrorKind(providers.KindCanceled)
	ErrorOther         ErrorKind = ErrorKind(providers.KindOther)
)

// ErrFailed: verification found a problem — a file MISSING, SIZE_MISMATCH, CHECKSUM_MISMATCH or
// CORRUPT (with strict, also UNVERIFIED).
var ErrFailed = errors.New("verification failed")

// Err sums the report up as one error for the exit status, nil when every replica is OK (or only
// UNVERIFIED, unless strict). A failed file anywhere wins (ErrFailed); then a replica that could
// not be checked for something the user must fix (not found, denied, misconfigured); then one that
// stayed unreachable; then an interruption. The error wraps the replica's own error, so
// providers.KindOf tells which.
func (r *Report) Err(strict bool) error {
	var failed []string
	for _, rr := range r.Replicas {
		for _, f := range rr.Files {
			if f.Status.Failed() || (strict && f.Status == StatusUnverified) {
				failed = append(failed, strings.TrimSpace(rr.Region+" "+rr.URL))
				break
			}
		}
	}
	if len(failed) > 0 {
		what := "files failed"
		if strict {
			what = "files failed or are unverified (--strict)"
		}
		return fmt.Errorf("%w: %s in %d of %d replica(s): %s", ErrFailed, what, len(failed), len(r.Replicas), strings.Join(failed, ", "))
	}
	rank := func(k ErrorKind) int {
		switch k {
		case "":
			return 0
		case ErrorCanceled:
			return 1
		case ErrorUnreachable, ErrorTimeout:
			return 2
		}
		return 3 // what the user must fix
	}
	var worst *ReplicaResult
	for i := range r.Replicas {
		rr := &r.Replicas[i]
		if rr.ErrorKind != "" && (worst == nil || rank(rr.ErrorKind) > rank(worst.ErrorKind)) {
			worst = rr
		}
	}
	if worst == nil {
		return nil
	}
	if worst.Err != nil {
		return &replicaError{msg: worst.Error, err: worst.Err}
	}
	return errors.New(worst.Error)
}

// replicaError shows a replica's Error (which names it) and wraps its cause.
type replicaError struct {
	msg string
	err error
}

func (e *replicaError) Error() string { return e.msg }
func (e *replicaError) Unwrap() error { return e.err }

// ToRepair returns the manifest files of the replica that are not proven OK — MISSING,
// SIZE_MISMATCH, CHECKSUM_MISMATCH, CORRUPT, UNVERIFIED and ERROR — in path order. EXTRA files
// are not included. Copying exactly these (with native checksums) makes the replica quick-verify
// OK. For an UNREACHABLE replica whose listing failed every file is ERROR, so all are returned;
// check Status first.
func (r *ReplicaResult) ToRepair() []FileResult {
	var out []FileResult
	for _, f := range r.Files {
		if f.Status != StatusOK && f.Status != StatusExtra {
			out = append(out, f)
		}
	}
	return out
}

// Report is the result of verifying several replicas against one manifest.
type Report struct {
	Manifest string          `json:"manifest"`
	Mode     string          `json:"mode"` // "quick" or "deep"
	Replicas []ReplicaResult `json:"replicas"`
}
