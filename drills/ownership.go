// What a drill record proves: a record read back from the state store is untrusted input (anyone
// who can create an object there can write one), so `drill cleanup` acts on a part of it only
// when that part is provably the drill's — a process group by its leader's start time and
// session, the temp dir this host created, fault copies under the record's own key, fault paths
// the drill file names, failover runs the drill's executors started.

package drills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/manifest"
)

// proc is a process as /proc/PID/stat describes it.
type proc struct {
	state   byte
	ppid    int
	pgrp    int
	session int
	start   string // clock ticks after boot
}

// readProc reads /proc/PID/stat; ok false when there is no such process (or it is unreadable).
func readProc(pid int) (p proc, ok bool) {
	if pid <= 0 {
		return p, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return p, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces and parentheses
	if i < 0 {
		return p, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) == 0 {
		return p, false
	}
	// after the command: state(3) ppid(4) pgrp(5) session(6) ... starttime(22)
	p.state, p.start = f[0][0], f[19]
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.session, _ = strconv.Atoi(f[3])
	return p, true
}

func (p proc) live() bool { return p.state != 'Z' && p.state != 'X' }

// ticks compares start times numerically ("" is unknown: -1).
func ticks(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// groupProof says why process group c.PGID may be signalled as the drill's candidate, or an
// error saying why not. The group must be larger than 1 (kill(-1) is every process, 0 the
// caller's own group) and its leader the very process recorded (pid = pgid, the recorded start
// time). It must also carry what only the drill's candidate has: the candidate's random mark in
// its environment (launch.Started.Mark, which another process cannot be made to carry) and,
// where the drill's session could be read (it reads 0 inside a PID namespace whose session
// leader is outside it), that session — kill -9 of the drill changes neither. A group whose leader is gone is signalled only when every member left
// carries the same proof and started after the candidate did. What cannot be read is refused.
func groupProof(rec *DrillRecord, c CandidateRecord) error {
	if c.PGID <= 1 {
		return fmt.Errorf("process group %d of %s: refused: a group id of 1 or less is no candidate's (kill(-1) signals every process)", c.PGID, c.Region)
	}
	if ticks(c.Start) < 0 || c.Mark == "" {
		return fmt.Errorf("process group %d of %s: refused: the record names no leader start time or candidate mark to prove it is the drill's", c.PGID, c.Region)
	}
	if !markRE.MatchString(c.Mark) {
		return fmt.Errorf("process group %d of %s: refused: the record's candidate mark is not 32 hex digits", c.PGID, c.Region)
	}
	p, ok := readProc(c.PGID)
	if ok && p.live() {
		switch {
		case p.start != c.Start:
			return fmt.Errorf("process group %d of %s: refused: its leader is another process now (started at tick %s, recorded %s)", c.PGID, c.Region, p.start, c.Start)
		case p.pgrp != c.PGID:
			return fmt.Errorf("process group %d of %s: refused: pid %d leads no group of that id", c.PGID, c.Region, c.PGID)
		case rec.SID > 1 && p.session != rec.SID:
			return fmt.Errorf("process group %d of %s: refused: its leader is in session %d, the drill ran in session %d", c.PGID, c.Region, p.session, rec.SID)
		}
		if err := markProof(c.PGID, c.Mark); err != nil {
			return fmt.Errorf("process group %d of %s: refused: its leader %w", c.PGID, c.Region, err)
		}
		return nil
	}
	if err := syscall.Kill(c.PGID, 0); !ok && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process group %d of %s: refused: its leader pid %d exists but its /proc entry cannot be read: cannot tell whether it is the drill's", c.PGID, c.Region, c.PGID)
	}
	if procHidden() {
		return fmt.Errorf("process group %d of %s: refused: its leader is gone and this process cannot see every process in /proc (hidepid): cannot tell whether its members are the drill's", c.PGID, c.Region)
	}
	for _, pid := range groupMembers(c.PGID) {
		p, ok := readProc(pid)
		if !ok || !p.live() {
			continue
		}
		if (rec.SID > 1 && p.session != rec.SID) || ticks(p.start) < ticks(c.Start) {
			return fmt.Errorf("process group %d of %s: refused: its leader is gone and member pid %d is not the drill's (session %d, started at tick %s)", c.PGID, c.Region, pid, p.session, p.start)
		}
		if err := markProof(pid, c.Mark); err != nil {
			return fmt.Errorf("process group %d of %s: refused: its leader is gone and member pid %d %w", c.PGID, c.Region, pid, err)
		}
	}
	return nil
}

// markRE is a candidate mark as launchers make it.
var markRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// maxEnvironBytes bounds the /proc/PID/environ read.
const maxEnvironBytes = 1 << 20

// markProof says whether pid's environment carries LIFEBOAT_CANDIDATE=mark. An environment
// that cannot be read is "cannot tell": refused.
func markProof(pid int, mark string) error {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return fmt.Errorf("has an environment this process cannot read (%v): cannot tell whether it is the drill's", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnvironBytes))
	if err != nil {
		return fmt.Errorf("has an environment this process cannot read (%v): cannot tell whether it is the drill's", err)
	}
	want := launch.MarkEnv + "=" + mark
	for _, kv := range bytes.Split(b, []byte{0}) {
		if string(kv) == want {
			return nil
		}
	}
	return fmt.Errorf("does not carry the candidate's mark (%s) in its environment: not the drill's candidate", launch.MarkEnv)
}

// groupMembers are the pids whose process group is pgid.
func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.pgrp == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// tempNameRE is the name os.MkdirTemp gives the drill's working directory.
var tempNameRE = regexp.MustCompile(`^lifeboat-drill-[0-9]+$`)

// tempDirProof says whether dir may be removed as the drill's temp dir: exactly a directory this
// host's drill created — an absolute, clean path directly under this process's temp root, named
// as MkdirTemp names it, a directory and not a symbolic link, owned by the caller.
func tempDirProof(dir string) error {
	root := filepath.Clean(os.TempDir())
	switch {
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return fmt.Errorf("temp dir %q: refused: not a clean absolute path", dir)
	case filepath.Dir(dir) != root:
		return fmt.Errorf("temp dir %s: refused: not directly under this process's temp root %s (run the clean-up with TMPDIR as the drill had it)", dir, root)
	case !tempNameRE.MatchString(filepath.Base(dir)):
		return fmt.Errorf("temp dir %s: refused: not a name a drill gives its temp dir", dir)
	}
	fi, err := os.Lstat(dir)
	if os.IsNotExist(err) {
		return nil // nothing to remove
	}
	if err != nil {
		return fmt.Errorf("temp dir %s: %w", dir, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("temp dir %s: refused: a symbolic link or not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("temp dir %s: refused: not owned by this user (uid %d)", dir, os.Getuid())
	}
	return nil
}

// recordIDRE is what a drill names its record: safe characters only.
var recordIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$`)

// recordProof says whether a record may be acted on at all: it is stored at the key its id
// names, and it is bound to this fleet file's digest.
func recordProof(rec *DrillRecord, fleetDigest string) error {
	switch {
	case !recordIDRE.MatchString(rec.ID) || strings.Contains(rec.ID, ".."):
		return fmt.Errorf("refused: record %s has an id %q that is not a drill's", rec.Key, rec.ID)
	case rec.Key != recordKey(rec.ID):
		return fmt.Errorf("refused: record %s names itself %q (%s)", rec.Key, rec.ID, recordKey(rec.ID))
	case rec.FleetDigest == "":
		return fmt.Errorf("refused: record %s is bound to no fleet digest", rec.Key)
	case rec.FleetDigest != fleetDigest:
		return fmt.Errorf("refused: record %s is for another fleet file (digest %s; %s)", rec.Key, rec.FleetDigest, fleetDigest)
	}
	return nil
}

// faultProof says whether a recorded fault may be put back: its copy is under the record's own
// key prefix, the drill file names a replica fault of that kind, region and path, and the
// manifest lists the path. It returns the manifest's entry for the path (the restored bytes are
// checked against it).
func faultProof(rec *DrillRecord, f FaultUndo, d *Drill, fl *fleet.Fleet, m *manifest.Manifest) (*manifest.File, error) {
	prefix := activeDir + "/" + rec.ID + "/faults/"
	n := strings.TrimSuffix(strings.TrimPrefix(f.Copy, prefix), ".orig")
	if !strings.HasPrefix(f.Copy, prefix) || !strings.HasSuffix(f.Copy, ".orig") || n == "" || strings.Trim(n, "0123456789") != "" {
		return nil, fmt.Errorf("fault %s: refused: its copy %q is not under the record's own key %s", f.Name, f.Copy, prefix)
	}
	named := d != nil && slices.ContainsFunc(d.Faults, func(df Fault) bool {
		return effectOf(df) == effectReplica && df.Kind == f.Kind && df.Region == f.Region && df.Path == f.Path
	})
	if !named {
		file := "no drill file"
		if d != nil {
			file = d.File
		}
		return nil, fmt.Errorf("fault %s: refused: %s names no %s fault of %s in region %s", f.Name, file, f.Kind, f.Path, f.Region)
	}
	if fl.Regions[f.Region] == nil {
		return nil, fmt.Errorf("fault %s: refused: region %s is not in the fleet", f.Name, f.Region)
	}
	if m != nil {
		for i := range m.Files {
			if m.Files[i].Path == f.Path {
				return &m.Files[i], nil
			}
		}
	}
	return nil, fmt.Errorf("fault %s: refused: %s is not a file of the manifest", f.Name, f.Path)
}
