package verify

import "lifeboat/providers/checksum"

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

// Failed reports whether the status fails a verify (exit 1).
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
	ReplicaUnreachable ReplicaStatus = "UNREACHABLE" // the store stayed unreachable after retries
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
	URL    string         `json:"url"`
	Status ReplicaStatus  `json:"status"`
	Counts map[Status]int `json:"counts"`
	Files  []FileResult   `json:"files"`
	// Error is set when the replica, or some of its files, could not be checked (UNREACHABLE,
	// permission, missing bucket); it names the store, never a credential.
	Error string `json:"error,omitempty"`
	// ErrorKind classifies Error: "unreachable" (network, 5xx, throttling after the SDK's
	// retries, or --timeout), "permission" (credentials refused), "not_found" (no such bucket,
	// container or directory), "canceled" (interrupted) or "other".
	ErrorKind ErrorKind `json:"error_kind,omitempty"`
	// Err is the first error behind Error, for errors.Is (providers.ErrPermission…).
	Err error `json:"-"`
	// Warnings are things worth knowing that fail nothing (objects with invalid names skipped by
	// the listing, native checksums that disagree with bytes that are right).
	Warnings []string `json:"warnings,omitempty"`
	// BytesRead is how many content bytes a deep verification read and hashed.
	BytesRead int64 `json:"bytes_read,omitempty"`
	// Seconds is the wall time the replica took.
	Seconds float64 `json:"seconds"`
}

// ErrorKind classifies why a replica or file could not be checked.
type ErrorKind string

const (
	ErrorUnreachable ErrorKind = "unreachable"
	ErrorPermission  ErrorKind = "permission"
	ErrorNotFound    ErrorKind = "not_found"
	ErrorCanceled    ErrorKind = "canceled"
	ErrorOther       ErrorKind = "other"
)

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
