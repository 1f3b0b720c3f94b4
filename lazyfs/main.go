// kt-lazyfs: kafka-trial's write-back filesystem (the role of Jepsen's LazyFS).
//
//	kt-lazyfs run --backing DIR --mount DIR [--socket PATH] [--dirty-limit BYTES] [-- CMD ARGS...]
//	kt-lazyfs ctl [--socket PATH] [--reply-file PATH] status | checkpoint | lose-unfsynced [--torn SEED] | enospc on|off | kill
//
// `run` mounts DIR's write-back view and, given a command, runs it as its child
// (the broker): a crash command kills the child, and when the child ends the
// mount ends too. Every `ctl` command answers one line of JSON. See README.md.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const defaultSocket = "/run/kt-lazyfs.sock"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "run":
		os.Exit(runCmd(os.Args[2:]))
	case "ctl":
		os.Exit(ctlCmd(os.Args[2:]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kt-lazyfs run --backing DIR --mount DIR [--socket PATH] [--dirty-limit BYTES] [-- CMD ARGS...]")
	fmt.Fprintln(os.Stderr, "       kt-lazyfs ctl [--socket PATH] [--reply-file PATH] status|checkpoint|lose-unfsynced [--torn SEED]|enospc on|off|kill")
	os.Exit(2)
}

func socketDefault() string {
	if s := os.Getenv("KT_LAZYFS_SOCKET"); s != "" {
		return s
	}
	return defaultSocket
}

// --- ctl: the client ------------------------------------------------------------------

// held keeps ctl's connection open until the process exits (see ctlOpen).
var held net.Conn

func ctlCmd(args []string) int {
	fl := flag.NewFlagSet("ctl", flag.ExitOnError)
	sock := fl.String("socket", socketDefault(), "control socket")
	replyFile := fl.String("reply-file", "", "also write the answer to this file")
	_ = fl.Parse(args)
	if fl.NArg() == 0 {
		usage()
	}
	reply, conn, err := ctlOpen(*sock, strings.Join(fl.Args(), " "))
	held = conn
	code := 0
	if err != nil {
		out, _ := json.Marshal(Result{"error": err.Error()})
		reply, code = string(out), 1
	} else if strings.Contains(reply, `"error"`) {
		code = 1
	}
	if *replyFile != "" {
		// docker exec can lose a quick process's stdout under load (exit 0, no output):
		// the caller then reads the answer here. Written whole, then renamed.
		tmp := *replyFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(reply+"\n"), 0o644); err == nil {
			_ = os.Rename(tmp, *replyFile)
		}
	}
	fmt.Println(reply)
	_ = os.Stdout.Sync()
	if ms, err := strconv.Atoi(os.Getenv("KT_LAZYFS_CTL_HOLD_MS")); err == nil {
		// Tests: an answered ctl that is slow to exit must still outlive the mount.
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	return code
}

// Ctl sends one command and returns the JSON line that answers it.
func Ctl(sock, command string) (string, error) {
	reply, c, err := ctlOpen(sock, command)
	if c != nil {
		c.Close()
	}
	return reply, err
}

// ctlOpen is Ctl with the connection left open. After a crash command the supervisor
// ends when its caller closes the connection, and with it the container and every
// process in it: `kt-lazyfs ctl` run by `docker exec` closes it by exiting, once its
// answer is out, or the exec would end killed, with no answer and no exit code.
func ctlOpen(sock, command string) (string, net.Conn, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return "", nil, fmt.Errorf("no kt-lazyfs at %s: %w", sock, err)
	}
	_ = c.SetDeadline(time.Now().Add(120 * time.Second))
	if _, err := fmt.Fprintln(c, command); err != nil {
		return "", c, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		return "", c, fmt.Errorf("kt-lazyfs closed without answering: %w", err)
	}
	return strings.TrimSpace(line), c, nil
}

// --- run: mount, serve, supervise --------------------------------------------------------

type supervisor struct {
	lfs   *LazyFS
	child *exec.Cmd

	mu        sync.Mutex
	crashing  bool          // a crash command owns the end: the child's exit writes nothing back
	ended     bool          // the supervisor has decided how it ends
	childDone chan struct{} // closed when the child has exited
	crashDone chan struct{} // closed when the crash command has answered
	ctlMu     sync.Mutex    // one command at a time
}

func runCmd(args []string) int {
	fl := flag.NewFlagSet("run", flag.ExitOnError)
	backing := fl.String("backing", "", "the directory that holds what was fsynced")
	mount := fl.String("mount", "", "where the write-back view is mounted")
	sock := fl.String("socket", socketDefault(), "control socket")
	limit := fl.Int64("dirty-limit", 512<<20, "write back the largest dirty file past this many dirty bytes (0: never)")
	debug := fl.Bool("debug", false, "log every FUSE request")
	_ = fl.Parse(args)
	if *backing == "" || *mount == "" {
		usage()
	}
	syscall.Umask(0) // the kernel already applied the caller's umask
	for _, d := range []string{*backing, *mount} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail("creating %s: %v", d, err)
		}
	}
	lfs, err := NewLazyFS(*backing, *limit)
	if err != nil {
		return fail("backing directory: %v", err)
	}
	if err := lfs.Mount(*mount, *debug); err != nil {
		return fail("mounting %s: %v (the container needs /dev/fuse and CAP_SYS_ADMIN)", *mount, err)
	}
	sv := &supervisor{lfs: lfs, childDone: make(chan struct{}), crashDone: make(chan struct{})}
	ln, err := listen(*sock)
	if err != nil {
		_ = lfs.Unmount()
		return fail("control socket %s: %v", *sock, err)
	}
	defer os.Remove(*sock)
	go sv.serve(ln)
	logf("mounted %s over %s (control: %s)", *mount, *backing, *sock)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1)
	code := 0
	if rest := fl.Args(); len(rest) > 0 {
		code = sv.supervise(rest, sigs)
	} else {
		for sig := range sigs {
			if sig != syscall.SIGUSR1 {
				break
			}
		}
		close(sv.childDone)
	}
	sv.mu.Lock()
	sv.ended = true
	crashing := sv.crashing
	sv.mu.Unlock()
	if crashing {
		<-sv.crashDone
	} else if res, err := lfs.Checkpoint(); err != nil {
		logf("write-back at exit failed: %v", err)
		code = max(code, 1)
	} else {
		logf("wrote back %v files, %v bytes at exit", res["files"], res["bytes"])
	}
	ln.Close()
	// The last word on what this mount did, for whoever reads the container's log
	// after the broker has gone (a broker that halts on ENOSPC takes the socket with it).
	if final, err := json.Marshal(lfs.Status()); err == nil {
		logf("final status %s", final)
	}
	if err := lfs.Unmount(); err != nil {
		logf("unmount: %v", err)
	}
	return code
}

// supervise runs the child until it exits, passing on the signals meant for it;
// SIGUSR1 is a process crash (SIGKILL of the child; what it wrote is kept).
func (sv *supervisor) supervise(argv []string, sigs chan os.Signal) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		close(sv.childDone)
		return fail("starting %s: %v", argv[0], err)
	}
	sv.mu.Lock()
	sv.child = cmd
	sv.mu.Unlock()
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGUSR1 {
				sv.killChild()
				continue
			}
			_ = cmd.Process.Signal(sig)
		}
	}()
	err := cmd.Wait()
	close(sv.childDone)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else {
			code = ee.ExitCode()
		}
	} else if err != nil {
		code = 1
	}
	logf("child exited (%d)", code)
	return code
}

// killChild SIGKILLs the child's process group; false if there is no child.
func (sv *supervisor) killChild() bool {
	sv.mu.Lock()
	cmd := sv.child
	sv.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return false
	}
	select {
	case <-sv.childDone:
		return false
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	return true
}

func listen(sock string) (net.Listener, error) {
	_ = os.Remove(sock)
	if err := os.MkdirAll(dirOf(sock), 0o755); err != nil {
		return nil, err
	}
	return net.Listen("unix", sock)
}

func dirOf(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "."
}

func (sv *supervisor) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go sv.handle(c)
	}
}

func (sv *supervisor) handle(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		return
	}
	sv.ctlMu.Lock()
	defer sv.ctlMu.Unlock()
	res, crash := sv.do(strings.Fields(line))
	out, _ := json.Marshal(res)
	_, _ = c.Write(append(out, '\n'))
	if crash {
		// The answer must reach the caller before the mount (and the container) ends.
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Read(make([]byte, 1))
		close(sv.crashDone)
	}
}

// do runs one command; crash says the supervisor ends once it has answered.
func (sv *supervisor) do(args []string) (Result, bool) {
	bad := func(format string, a ...any) (Result, bool) {
		return Result{"error": fmt.Sprintf(format, a...)}, false
	}
	if len(args) == 0 {
		return bad("empty command")
	}
	t0 := time.Now()
	var res Result
	var err error
	crash := false
	switch args[0] {
	case "status":
		res = sv.lfs.Status()
	case "checkpoint":
		res, err = sv.lfs.Checkpoint()
	case "enospc":
		if len(args) != 2 || (args[1] != "on" && args[1] != "off") {
			return bad("usage: enospc on|off")
		}
		res = sv.lfs.SetENOSPC(args[1] == "on")
	case "lose-unfsynced":
		torn, seed := false, int64(0)
		if len(args) == 3 && args[1] == "--torn" {
			if seed, err = strconv.ParseInt(args[2], 10, 64); err != nil {
				return bad("--torn needs an integer seed")
			}
			torn = true
		} else if len(args) != 1 {
			return bad("usage: lose-unfsynced [--torn SEED]")
		}
		killed := sv.crash()
		res, err = sv.lfs.LoseUnfsynced(torn, seed)
		if killed {
			res["process"] = "killed"
			crash = err == nil
		}
	case "kill":
		if !sv.killChild() {
			return bad("no process to kill")
		}
		res = Result{"process": "killed"}
	default:
		return bad("unknown command %q", args[0])
	}
	if err != nil {
		if crash {
			close(sv.crashDone)
		}
		return Result{"error": err.Error()}, false
	}
	res["command"] = strings.Join(args, " ")
	res["took_ms"] = time.Since(t0).Milliseconds()
	return res, crash
}

// crash: a machine that loses its page cache loses its processes too. The child is
// SIGKILLed and reaped before anything is dropped; true if there was one.
func (sv *supervisor) crash() bool {
	sv.mu.Lock()
	hasChild := sv.child != nil && !sv.ended
	if hasChild {
		sv.crashing = true
	}
	sv.mu.Unlock()
	if !hasChild {
		return false
	}
	sv.killChild()
	<-sv.childDone
	return true
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "kt-lazyfs: "+format+"\n", a...)
}

func fail(format string, a ...any) int {
	logf(format, a...)
	return 1
}
