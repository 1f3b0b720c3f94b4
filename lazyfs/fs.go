package main

// The FUSE side: a loopback of the backing directory whose file contents are
// written back lazily (overlay.go). The namespace is not: create, mkdir, rename,
// unlink, link and rmdir reach the backing directory when they happen, as in
// LazyFS. See README.md for what lose-unfsynced then means for each of them.

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// LazyFS is one mounted write-back filesystem.
type LazyFS struct {
	backing    string
	mountpoint string
	dirtyLimit int64 // write back the largest dirty file past this many dirty bytes (0: never)

	mu    sync.Mutex
	files map[uint64]*fileState // by backing inode number: every open or dirty file

	enospc        atomic.Bool
	refusedWrites atomic.Int64
	refusedBytes  atomic.Int64
	fsyncs        atomic.Int64
	writtenBack   atomic.Int64 // bytes written back under the dirty limit, without fsync
	lostFiles     atomic.Int64 // totals since mount, over every lose-unfsynced
	lostBytes     atomic.Int64

	root   *node
	server *fuse.Server
}

func NewLazyFS(backing string, dirtyLimit int64) (*LazyFS, error) {
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	l := &LazyFS{backing: backing, dirtyLimit: dirtyLimit, files: map[uint64]*fileState{}}
	r := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	r.NewNode = func(rd *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: rd}, lfs: l}
	}
	l.root = r.NewNode(r, nil, "", &st).(*node)
	r.RootNode = l.root
	return l, nil
}

// Mount serves the filesystem at mountpoint. Cached mode (no direct I/O), so that
// shared mmap works: the kernel's page cache sits above the overlay.
func (l *LazyFS) Mount(mountpoint string, debug bool) error {
	sec := time.Second
	opts := &fs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			FsName:     "kt-lazyfs",
			Name:       "kt-lazyfs",
			AllowOther: true,
			// mount(2) itself: no fusermount in the image, and an EPERM that says
			// what is missing (CAP_SYS_ADMIN) rather than a missing helper.
			DirectMountStrict: true,
			MaxWrite:          1 << 20,
			Debug:             debug,
		},
	}
	srv, err := fs.Mount(mountpoint, l.root, opts)
	if err != nil {
		return err
	}
	l.server, l.mountpoint = srv, mountpoint
	closeFuseOnExec()
	return nil
}

// closeFuseOnExec: go-fuse's direct mount leaves /dev/fuse open across exec. A child
// holding it keeps the connection alive after this process dies, and a child that
// is then killed while closing a file on the mount waits forever for an answer
// nobody can give: its container never ends. So no child may inherit it.
func closeFuseOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			var fd int
			if _, err := fmt.Sscan(e.Name(), &fd); err == nil {
				syscall.CloseOnExec(fd)
			}
		}
	}
}

func (l *LazyFS) Unmount() error {
	if l.server == nil {
		return nil
	}
	err := l.server.Unmount()
	if err != nil {
		// Someone still holds a file open (a `docker exec` shell): detach instead.
		err = syscall.Unmount(l.mountpoint, syscall.MNT_DETACH)
	}
	return err
}

// Wait blocks until the filesystem is unmounted.
func (l *LazyFS) Wait() {
	if l.server != nil {
		l.server.Wait()
	}
}

// --- file states ---------------------------------------------------------------

// adopt returns the state of the backing file f is open on, creating it, and
// counts one more open handle when open is set. f is closed if a state exists.
func (l *LazyFS) adopt(f *os.File, open bool) (*fileState, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.files[st.Ino]
	if ok {
		f.Close()
	} else {
		var err error
		if s, err = newFileState(st.Ino, f); err != nil {
			f.Close()
			return nil, err
		}
		l.files[st.Ino] = s
	}
	if open {
		s.mu.Lock()
		s.opens++
		s.mu.Unlock()
	}
	return s, nil
}

func (l *LazyFS) stateOf(path string, open bool) (*fileState, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	return l.adopt(f, open)
}

// release drops a state nobody holds open that has nothing left to write back.
func (l *LazyFS) release(s *fileState, closing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if closing {
		s.opens--
	}
	if s.opens > 0 || (s.dirty() && !s.gone) {
		return
	}
	if l.files[s.ino] == s {
		delete(l.files, s.ino)
	}
	s.fd.Close()
}

// forget: the backing inode lost its last name; its number may be reused.
func (l *LazyFS) forget(ino uint64) {
	l.mu.Lock()
	s, ok := l.files[ino]
	if ok {
		delete(l.files, ino)
	}
	l.mu.Unlock()
	if ok {
		s.mu.Lock()
		// Whoever holds it open keeps its content; no crash can reach it now.
		s.gone = true
		closeNow := s.opens == 0
		s.mu.Unlock()
		if closeNow {
			s.fd.Close()
		}
	}
}

func (l *LazyFS) states() []*fileState {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*fileState, 0, len(l.files))
	for _, s := range l.files {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ino < out[j].ino })
	return out
}

// refuse counts a write refused for lack of space, when enospc is on.
func (l *LazyFS) refuse(n int) bool {
	if !l.enospc.Load() {
		return false
	}
	l.refusedWrites.Add(1)
	l.refusedBytes.Add(int64(n))
	return true
}

// afterWrite applies the dirty limit: like the kernel's flusher under memory
// pressure, it writes back the file with the most dirty bytes.
func (l *LazyFS) afterWrite() {
	if l.dirtyLimit <= 0 {
		return
	}
	var total int64
	var worst *fileState
	var worstN int64
	for _, s := range l.states() {
		s.mu.Lock()
		n := s.dirtyBytes()
		s.mu.Unlock()
		total += n
		if n > worstN {
			worst, worstN = s, n
		}
	}
	if total > l.dirtyLimit && worst != nil {
		if n, err := worst.Sync(); err == nil {
			l.writtenBack.Add(n)
		}
		l.release(worst, false)
	}
}

// pathOf names a state's file by what its descriptor reaches now (renames followed).
func (l *LazyFS) pathOf(s *fileState) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", s.fd.Fd()))
	if err != nil {
		return fmt.Sprintf("inode:%d", s.ino)
	}
	if rel, err := filepath.Rel(l.backing, p); err == nil {
		return rel
	}
	return p
}

// --- commands --------------------------------------------------------------------

// Result is what a command answers, as JSON.
type Result map[string]any

const maxPaths = 50

// Checkpoint writes back every file: everything written so far becomes durable.
func (l *LazyFS) Checkpoint() (Result, error) {
	l.flushKernel()
	files, bytes := 0, int64(0)
	for _, s := range l.states() {
		dirty, n, err := s.Synced()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.pathOf(s), err)
		}
		if dirty {
			files++
			bytes += n
		}
		l.release(s, false)
	}
	return Result{"files": files, "bytes": bytes}, nil
}

// LoseUnfsynced: every file goes back to its content at its last fsync. With
// torn, a seeded prefix of each file's dirty pages survives instead (Tear).
func (l *LazyFS) LoseUnfsynced(torn bool, seed int64) (Result, error) {
	l.flushKernel()
	rng := rand.New(rand.NewSource(seed))
	files, bytes, keptBytes := 0, int64(0), int64(0)
	paths := []string{}
	var lost []*fileState
	for _, s := range l.states() {
		var dropped, kept int64
		changed := false
		if torn {
			var err error
			if changed, kept, dropped, err = s.Tear(rng); err != nil {
				return nil, err
			}
		} else {
			changed, dropped = s.Lost()
		}
		if changed {
			files++
			bytes += dropped
			keptBytes += kept
			lost = append(lost, s)
			if len(paths) < maxPaths {
				paths = append(paths, l.pathOf(s))
			}
		}
		l.release(s, false)
	}
	l.invalidate(lost)
	l.lostFiles.Add(int64(files))
	l.lostBytes.Add(bytes)
	res := Result{"files": files, "bytes": bytes, "paths": paths}
	if torn {
		res["torn"] = true
		res["seed"] = seed
		res["kept_bytes"] = keptBytes
	}
	return res, nil
}

// SetENOSPC turns refusing writes on or off; off reports what was refused.
func (l *LazyFS) SetENOSPC(on bool) Result {
	was := l.enospc.Swap(on)
	res := Result{"enospc": on, "was": was}
	if on && !was {
		l.refusedWrites.Store(0)
		l.refusedBytes.Store(0)
	}
	res["refused_writes"] = l.refusedWrites.Load()
	res["refused_bytes"] = l.refusedBytes.Load()
	return res
}

func (l *LazyFS) Status() Result {
	files, bytes := 0, int64(0)
	for _, s := range l.states() {
		s.mu.Lock()
		if s.dirty() && !s.gone {
			files++
			bytes += s.dirtyBytes()
		}
		s.mu.Unlock()
	}
	return Result{
		"dirty_files":    files,
		"dirty_bytes":    bytes,
		"enospc":         l.enospc.Load(),
		"refused_writes": l.refusedWrites.Load(),
		"refused_bytes":  l.refusedBytes.Load(),
		"fsyncs":         l.fsyncs.Load(),
		"written_back":   l.writtenBack.Load(),
		"lost_files":     l.lostFiles.Load(),
		"lost_bytes":     l.lostBytes.Load(),
	}
}

// flushKernel brings the kernel's dirty pages (shared mmap writes) into the overlay
// first, so that a command sees every write made so far.
func (l *LazyFS) flushKernel() {
	if l.server == nil {
		return
	}
	fd, err := syscall.Open(l.mountpoint, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer syscall.Close(fd)
	_ = unix.Syncfs(fd)
}

// invalidate drops the kernel's cached pages and lengths of the given files, so a
// reader sees them as they went back to.
func (l *LazyFS) invalidate(states []*fileState) {
	if l.server == nil || len(states) == 0 {
		return
	}
	want := map[uint64]bool{}
	for _, s := range states {
		want[s.ino] = true
	}
	var walk func(n *fs.Inode)
	seen := map[*fs.Inode]bool{}
	walk = func(n *fs.Inode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if nd, ok := n.Operations().(*node); ok {
			if s := nd.st.Load(); s != nil && want[s.ino] {
				n.NotifyContent(0, 0)
			}
		}
		for _, ch := range n.Children() {
			walk(ch)
		}
	}
	walk(l.root.EmbeddedInode())
}

// --- nodes -------------------------------------------------------------------------

type node struct {
	fs.LoopbackNode
	lfs *LazyFS
	st  atomic.Pointer[fileState] // the state last opened through this node
}

var (
	_ = (fs.NodeLookuper)((*node)(nil))
	_ = (fs.NodeCreater)((*node)(nil))
	_ = (fs.NodeOpener)((*node)(nil))
	_ = (fs.NodeGetattrer)((*node)(nil))
	_ = (fs.NodeSetattrer)((*node)(nil))
	_ = (fs.NodeUnlinker)((*node)(nil))
	_ = (fs.NodeRenamer)((*node)(nil))
	_ = (fs.NodeMkdirer)((*node)(nil))
	_ = (fs.NodeCopyFileRanger)((*node)(nil))
)

func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.RootData.RootNode.EmbeddedInode()))
}

// overlayAttr puts a file's write-back length and time over its backing attributes.
func (l *LazyFS) overlayAttr(ino uint64, a *fuse.Attr) {
	l.mu.Lock()
	s, ok := l.files[ino]
	l.mu.Unlock()
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Size = uint64(s.size)
	a.Blocks = (a.Size + 511) / 512
	if s.dirty() {
		a.SetTimes(nil, &s.mtime, nil)
	}
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 && out.Attr.Mode&syscall.S_IFMT == syscall.S_IFREG {
		n.lfs.overlayAttr(out.Attr.Ino, &out.Attr)
	}
	return ch, errno
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	err := syscall.Lstat(n.backingPath(), &st)
	if err != nil {
		// Unlinked while open: the descriptor still reaches it.
		s := n.st.Load()
		if s == nil {
			return fs.ToErrno(err)
		}
		if err := syscall.Fstat(int(s.fd.Fd()), &st); err != nil {
			return fs.ToErrno(err)
		}
	}
	out.FromStat(&st)
	if st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		n.lfs.overlayAttr(st.Ino, &out.Attr)
	}
	return 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		var s *fileState
		if h, ok := f.(*handle); ok {
			s = h.s
		} else {
			var err error
			if s, err = n.lfs.stateOf(n.backingPath(), false); err != nil {
				return fs.ToErrno(err)
			}
			defer n.lfs.release(s, false)
		}
		s.mu.Lock()
		grows := int64(sz) > s.size
		s.mu.Unlock()
		if grows && n.lfs.refuse(0) {
			return syscall.ENOSPC
		}
		s.Truncate(int64(sz))
		n.st.Store(s)
		rest := *in
		rest.Valid &^= fuse.FATTR_SIZE
		in = &rest
	}
	if in.Valid&^(fuse.FATTR_FH|fuse.FATTR_LOCKOWNER) != 0 {
		if errno := n.LoopbackNode.Setattr(ctx, nil, in, out); errno != 0 {
			return errno
		}
		if mt, ok := in.GetMTime(); ok {
			if s := n.st.Load(); s != nil {
				s.mu.Lock()
				s.mtime = mt
				s.mu.Unlock()
			}
		}
	}
	return n.Getattr(ctx, f, out)
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	s, err := n.lfs.stateOf(n.backingPath(), true)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	if flags&syscall.O_TRUNC != 0 {
		s.Truncate(0)
	}
	n.st.Store(s)
	return &handle{s: s, lfs: n.lfs}, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.lfs.refuse(0) {
		return nil, nil, 0, syscall.ENOSPC
	}
	p := filepath.Join(n.backingPath(), name)
	of := os.O_RDWR | os.O_CREATE | syscall.O_NOFOLLOW
	if flags&syscall.O_EXCL != 0 {
		of |= os.O_EXCL
	}
	f, err := os.OpenFile(p, of, os.FileMode(mode&07777))
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	if caller, ok := fuse.FromContext(ctx); ok && os.Getuid() == 0 {
		_ = f.Chown(int(caller.Uid), int(caller.Gid))
	}
	s, err := n.lfs.adopt(f, true)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	if flags&syscall.O_TRUNC != 0 {
		s.Truncate(0)
	}
	ch, errno := n.Lookup(ctx, name, out)
	if errno != 0 {
		n.lfs.release(s, true)
		return nil, nil, 0, errno
	}
	if nd, ok := ch.Operations().(*node); ok {
		nd.st.Store(s)
	}
	return ch, &handle{s: s, lfs: n.lfs}, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.lfs.refuse(0) {
		return nil, syscall.ENOSPC
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.lfs.refuse(len(target)) {
		return nil, syscall.ENOSPC
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.lfs.refuse(0) {
		return nil, syscall.ENOSPC
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.lfs.refuse(0) {
		return nil, syscall.ENOSPC
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

// lastLink: the inode a name reaches, if removing that name removes its last link.
func lastLink(p string) (uint64, bool) {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, false
	}
	return st.Ino, st.Nlink <= 1
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	p := filepath.Join(n.backingPath(), name)
	ino, last := lastLink(p)
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 && last {
		n.lfs.forget(ino)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	var target uint64
	var replaces bool
	if np, ok := newParent.(*node); ok && flags&unixRenameExchange == 0 {
		src, _ := lastLink(filepath.Join(n.backingPath(), name))
		target, replaces = lastLink(filepath.Join(np.backingPath(), newName))
		replaces = replaces && target != src
	}
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno == 0 && replaces {
		n.lfs.forget(target)
	}
	return errno
}

const unixRenameExchange = 0x2

// CopyFileRange would copy backing bytes behind the overlay's back: refused, so the
// kernel falls back to reads and writes.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// --- open files ----------------------------------------------------------------------

type handle struct {
	s   *fileState
	lfs *LazyFS
}

var (
	_ = (fs.FileReader)((*handle)(nil))
	_ = (fs.FileWriter)((*handle)(nil))
	_ = (fs.FileFsyncer)((*handle)(nil))
	_ = (fs.FileReleaser)((*handle)(nil))
	_ = (fs.FileFlusher)((*handle)(nil))
	_ = (fs.FileAllocater)((*handle)(nil))
	_ = (fs.FileGetattrer)((*handle)(nil))
)

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.s.ReadAt(dest, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.lfs.refuse(len(data)) {
		return 0, syscall.ENOSPC
	}
	n, err := h.s.WriteAt(data, off)
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	h.lfs.afterWrite()
	return uint32(n), 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.lfs.fsyncs.Add(1)
	if _, err := h.s.Sync(); err != nil {
		return fs.ToErrno(err)
	}
	return 0
}

func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.lfs.release(h.s, true)
	return 0
}

func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if mode != 0 {
		return syscall.EOPNOTSUPP
	}
	h.s.mu.Lock()
	grows := int64(off+size) > h.s.size
	h.s.mu.Unlock()
	if !grows {
		return 0
	}
	if h.lfs.refuse(int(size)) {
		return syscall.ENOSPC
	}
	h.s.Truncate(int64(off + size))
	return 0
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(h.s.fd.Fd()), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	out.Size = uint64(h.s.size)
	out.Blocks = (out.Size + 511) / 512
	if h.s.dirty() {
		out.SetTimes(nil, &h.s.mtime, nil)
	}
	return 0
}
