package main

// Through a real FUSE mount: needs /dev/fuse and the right to mount (root). Where
// they are missing these tests skip and say why; the overlay tests still run.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestMain lets a test run this binary as kt-lazyfs itself (the supervisor test).
func TestMain(m *testing.M) {
	if os.Getenv("KT_LAZYFS_TEST_MAIN") == "mmap" {
		os.Exit(mmapHelper(strings.Fields(os.Getenv("KT_LAZYFS_TEST_ARGS"))))
	}
	if os.Getenv("KT_LAZYFS_TEST_MAIN") == "1" {
		os.Args = append([]string{"kt-lazyfs"}, strings.Fields(os.Getenv("KT_LAZYFS_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

func canMount(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse here")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root (CAP_SYS_ADMIN)")
	}
}

func mounted(t *testing.T) (*LazyFS, string, string) {
	t.Helper()
	canMount(t)
	dir := t.TempDir()
	b, m := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{b, m} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLazyFS(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Mount(m, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return l, b, m
}

func writeFile(t *testing.T, p string, data string, fsync bool) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if fsync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fsyncDir(t *testing.T, d string) {
	t.Helper()
	f, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync of directory %s: %v", d, err)
	}
}

func TestMountFsyncedSurvivesUnsyncedIsGone(t *testing.T) {
	l, b, m := mounted(t)
	writeFile(t, filepath.Join(m, "log"), "fsynced.", true)
	writeFile(t, filepath.Join(m, "log"), "not-fsynced.", false)
	writeFile(t, filepath.Join(m, "never"), "never fsynced", false)
	if got := read(t, filepath.Join(m, "log")); got != "fsynced.not-fsynced." {
		t.Fatalf("the mount reads %q before the crash", got)
	}
	if got := read(t, filepath.Join(b, "log")); got != "fsynced." {
		t.Fatalf("unfsynced bytes reached the backing directory: %q", got)
	}
	res, err := l.LoseUnfsynced(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res["files"] != 2 || res["bytes"] != int64(len("not-fsynced.")+len("never fsynced")) {
		t.Fatalf("lose-unfsynced records %v", res)
	}
	if got := read(t, filepath.Join(m, "log")); got != "fsynced." {
		t.Fatalf("after lose-unfsynced the mount reads %q (kernel cache not invalidated?)", got)
	}
	// A create is durable at once; its content is what it had at its last fsync.
	if got := read(t, filepath.Join(m, "never")); got != "" {
		t.Fatalf("a never-fsynced file reads %q, want empty", got)
	}
}

func TestMountNamespaceIsWrittenThrough(t *testing.T) {
	l, _, m := mounted(t)
	// Kafka's checkpoint pattern: temp file, fsync, rename; here without a
	// directory fsync after the rename.
	writeFile(t, filepath.Join(m, "cp.tmp"), "checkpoint-1", true)
	if err := os.Rename(filepath.Join(m, "cp.tmp"), filepath.Join(m, "cp")); err != nil {
		t.Fatal(err)
	}
	// A rename of a file whose content was never fsynced.
	writeFile(t, filepath.Join(m, "b.tmp"), "unsynced", false)
	if err := os.Rename(filepath.Join(m, "b.tmp"), filepath.Join(m, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(m, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m, "dir", "x"), "x", true)
	writeFile(t, filepath.Join(m, "gone"), "gone", true)
	if err := os.Remove(filepath.Join(m, "gone")); err != nil {
		t.Fatal(err)
	}
	fsyncDir(t, m) // a directory fsync answers, and changes nothing here
	if _, err := l.LoseUnfsynced(false, 0); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(m, "cp")); got != "checkpoint-1" {
		t.Fatalf("renamed fsynced file reads %q", got)
	}
	if _, err := os.Stat(filepath.Join(m, "cp.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the old name of a rename came back")
	}
	if got := read(t, filepath.Join(m, "b")); got != "" {
		t.Fatalf("a renamed never-fsynced file reads %q, want empty (the zero-length-file case)", got)
	}
	if got := read(t, filepath.Join(m, "dir", "x")); got != "x" {
		t.Fatalf("file in a new directory reads %q", got)
	}
	if _, err := os.Stat(filepath.Join(m, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("an unlinked file came back")
	}
}

// mmapHelper runs in a child process: a page fault on a FUSE mapping, served by the
// same process, could stall forever behind the Go runtime's stop-the-world (the
// fault is not a syscall, so the runtime waits for it, and the server goroutines
// that would answer it are stopped). A broker maps from its own process, as here.
func mmapHelper(args []string) int {
	// write PATH OFF TEXT sync|nosync  |  check PATH OFF TEXT
	f, err := os.OpenFile(args[1], os.O_RDWR, 0)
	if err != nil {
		return 2
	}
	defer f.Close()
	var off int
	fmt.Sscan(args[2], &off)
	mem, err := syscall.Mmap(int(f.Fd()), 0, 4*PageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mmap:", err)
		return 3
	}
	defer syscall.Munmap(mem)
	switch args[0] {
	case "write":
		copy(mem[off:], args[3])
		if args[4] == "sync" {
			// What MappedByteBuffer.force and FileChannel.force do.
			if err := msync(mem); err != nil {
				return 4
			}
			if err := f.Sync(); err != nil {
				return 5
			}
		}
	case "check":
		if string(mem[off:off+len(args[3])]) != args[3] {
			fmt.Fprintf(os.Stderr, "mapping shows %q\n", mem[off:off+len(args[3])])
			return 1
		}
	}
	return 0
}

func runMmap(t *testing.T, args ...string) error {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KT_LAZYFS_TEST_MAIN=mmap", "KT_LAZYFS_TEST_ARGS="+strings.Join(args, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func TestMountSharedMmap(t *testing.T) {
	l, b, m := mounted(t)
	p := filepath.Join(m, "00000000000000000000.index")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka sizes an index file first, then maps it shared.
	if err := f.Truncate(4 * PageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := runMmap(t, "write", p, "0", "synced-entry", "sync"); err != nil {
		t.Fatalf("shared writable mmap: %v", err)
	}
	if got := read(t, filepath.Join(b, filepath.Base(p))); !strings.HasPrefix(got, "synced-entry") || len(got) != 4*PageSize {
		t.Fatalf("fsync did not bring the mmap write to the backing file (%d bytes)", len(got))
	}
	if err := runMmap(t, "write", p, fmt.Sprint(PageSize), "unsynced-entry", "nosync"); err != nil {
		t.Fatal(err)
	}
	// A reader sees the mapped write through the page cache, before any fsync.
	if got := read(t, p); got[PageSize:PageSize+14] != "unsynced-entry" {
		t.Fatal("a read does not see the shared mmap write")
	}
	res, err := l.LoseUnfsynced(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res["files"] != 1 || res["bytes"] != int64(PageSize) {
		t.Fatalf("a dirty mapped page must be lost as a whole page: %v", res)
	}
	got := read(t, p)
	if !strings.HasPrefix(got, "synced-entry") || got[PageSize] != 0 {
		t.Fatal("after lose-unfsynced the index must read as at its last fsync")
	}
	if err := runMmap(t, "check", p, "0", "synced-entry"); err != nil {
		t.Fatalf("a new mapping does not show the fsynced write: %v", err)
	}
}

func TestMountENOSPC(t *testing.T) {
	l, _, m := mounted(t)
	writeFile(t, filepath.Join(m, "a"), "before", true)
	if res := l.SetENOSPC(true); res["enospc"] != true {
		t.Fatalf("enospc on answers %v", res)
	}
	f, err := os.OpenFile(filepath.Join(m, "a"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("refused")
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write under enospc gives %v, want ENOSPC", err)
	}
	if _, err := os.Create(filepath.Join(m, "new")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a create under enospc gives %v, want ENOSPC", err)
	}
	res := l.SetENOSPC(false)
	if res["refused_writes"] != int64(2) || res["refused_bytes"] != int64(7) {
		t.Fatalf("enospc off records %v, want 2 refused writes of 7 bytes", res)
	}
	writeFile(t, filepath.Join(m, "a"), "-after", true)
	if got := read(t, filepath.Join(m, "a")); got != "before-after" {
		t.Fatalf("after enospc off the file reads %q", got)
	}
}

func TestMountCheckpoint(t *testing.T) {
	l, b, m := mounted(t)
	writeFile(t, filepath.Join(m, "a"), "checkpointed", false)
	res, err := l.Checkpoint()
	if err != nil || res["files"] != 1 {
		t.Fatalf("checkpoint answers %v, %v", res, err)
	}
	if got := read(t, filepath.Join(b, "a")); got != "checkpointed" {
		t.Fatalf("checkpoint left %q in the backing directory", got)
	}
	if res, _ := l.LoseUnfsynced(false, 0); res["files"] != 0 {
		t.Fatalf("nothing is left to lose after a checkpoint, got %v", res)
	}
}

// The supervisor: lose-unfsynced kills the child first, answers, and the mount ends
// with the child's SIGKILL status; what the child wrote without fsync is gone.
func TestSupervisorCrash(t *testing.T) {
	canMount(t)
	dir := t.TempDir()
	b, m, sock := filepath.Join(dir, "b"), filepath.Join(dir, "m"), filepath.Join(dir, "ctl.sock")
	script := filepath.Join(dir, "child.sh")
	// The child also checks that it holds no /dev/fuse: a killed child that did would
	// keep the connection alive and hang in its own exit.
	leak := filepath.Join(dir, "leak")
	os.WriteFile(script, []byte("#!/bin/sh\nls -l /proc/$$/fd | grep -q /dev/fuse && touch "+leak+"\n"+
		"printf durable > "+m+"/f\nsync "+m+"/f 2>/dev/null || true\nprintf volatile >> "+m+"/f\nexec sleep 60\n"), 0o755)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KT_LAZYFS_TEST_MAIN=1",
		"KT_LAZYFS_TEST_ARGS=run --backing "+b+" --mount "+m+" --socket "+sock+" -- "+script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait for the child to have written.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := Ctl(sock, "status")
		if err == nil && strings.Contains(out, `"dirty_files":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never wrote: %s %v\n%s", out, err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := Ctl(sock, "lose-unfsynced")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res["process"] != "killed" || res["files"] != float64(1) || res["bytes"].(float64) <= 0 {
		t.Fatalf("lose-unfsynced answers %v", res)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 137 {
		t.Fatalf("the supervisor ends with %v, want exit 137\n%s", err, stderr.String())
	}
	if _, err := os.Stat(leak); err == nil {
		t.Fatal("the child inherited /dev/fuse")
	}
	got, _ := os.ReadFile(filepath.Join(b, "f"))
	// `sync FILE` fsyncs it (coreutils 8.24+); without it nothing was durable.
	if s := string(got); s != "durable" && s != "" {
		t.Fatalf("after the crash the backing file holds %q", s)
	}
}

// docker exec runs `kt-lazyfs ctl lose-unfsynced` inside the container that the
// crash ends: the mount (the container's first process) must outlive the ctl
// process, or the exec is killed before it prints its answer or exits. Here the ctl
// holds on for 1.5 s after printing; the supervisor must still be there when it exits.
func TestCrashWaitsForTheCtlToExit(t *testing.T) {
	canMount(t)
	dir := t.TempDir()
	b, m, sock := filepath.Join(dir, "b"), filepath.Join(dir, "m"), filepath.Join(dir, "ctl.sock")
	sup := exec.Command(os.Args[0])
	sup.Env = append(os.Environ(), "KT_LAZYFS_TEST_MAIN=1",
		"KT_LAZYFS_TEST_ARGS=run --backing "+b+" --mount "+m+" --socket "+sock+" -- sleep 60")
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer sup.Process.Kill()
	supDone := make(chan time.Time, 1)
	go func() { _ = sup.Wait(); supDone <- time.Now() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := Ctl(sock, "status"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("kt-lazyfs never answered status")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctl := exec.Command(os.Args[0])
	ctl.Env = append(os.Environ(), "KT_LAZYFS_TEST_MAIN=1", "KT_LAZYFS_CTL_HOLD_MS=1500",
		"KT_LAZYFS_TEST_ARGS=ctl --socket "+sock+" lose-unfsynced")
	out, err := ctl.Output()
	ctlExited := time.Now()
	if err != nil || !strings.Contains(string(out), `"process":"killed"`) {
		t.Fatalf("ctl lose-unfsynced: %v, %q", err, out)
	}
	select {
	case ended := <-supDone:
		if ended.Before(ctlExited.Add(-200 * time.Millisecond)) {
			t.Fatalf("the mount ended %v before the ctl that crashed it exited", ctlExited.Sub(ended))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the supervisor did not end after the crash")
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func msync(b []byte) error {
	_, _, e := syscall.Syscall(syscall.SYS_MSYNC, uintptrOf(b), uintptr(len(b)), syscall.MS_SYNC)
	if e != 0 {
		return e
	}
	return nil
}

// --reply-file holds the printed answer, an error answer too (no mount needed).
func TestCtlReplyFile(t *testing.T) {
	dir := t.TempDir()
	reply := filepath.Join(dir, "reply.json")
	ctl := exec.Command(os.Args[0])
	ctl.Env = append(os.Environ(), "KT_LAZYFS_TEST_MAIN=1",
		"KT_LAZYFS_TEST_ARGS=ctl --socket "+filepath.Join(dir, "none.sock")+" --reply-file "+reply+" status")
	out, err := ctl.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ctl without a mount: %v, want exit 1", err)
	}
	got, rerr := os.ReadFile(reply)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if string(got) != string(out) || !strings.Contains(string(got), `"error":"no kt-lazyfs at `) {
		t.Fatalf("the reply file holds %q, ctl printed %q", got, out)
	}
}
