/* artifact.c — sealing and checking AOT artifacts (artifact.h): the Loom trailer, ELF header
 * sanity, the BLAKE2b content hash and Ed25519 signatures through libsodium, and key files.
 * The only file of Loom that includes sodium.h. Nothing here maps or runs the artifact:
 * checking reads it with pread(2), so a file that shrinks meanwhile is an error, never a
 * SIGBUS. */
#include "vm/artifact.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL /* header-only: libloomrt links no xxhash library */
#include <xxhash.h>

#include "base/file.h"
#include "base/file_write.h"
#include "vm/exec.h"
#include "vm/kernel_abi.h"

#define BAD(...) LOOM_ERROR(DATA_LOSS, __VA_ARGS__)

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#define HOST_MACHINE_NAME "x86-64"
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#define HOST_MACHINE_NAME "AArch64"
#else
#error "artifact.c: add this machine's ELF e_machine"
#endif

static const char start_magic[8] = {'L', 'O', 'O', 'M', 'A', 'R', 'T', '\0'};
static const char end_magic[8] = {'\0', 'L', 'O', 'O', 'M', 'E', 'N', 'D'};
static const char sign_context[16] = {'l', 'o', 'o', 'm', '-', 'a', 'r', 't', 'i', 'f', 'a', 'c', 't', '-', 'v', '2'};

/* Field offsets in the trailer (artifact.h has the table). */
enum {
  T_MAGIC = 0,
  T_ABI = 8,
  T_EXEC_VERSION = 12,
  T_FILE_SIZE = 16,
  T_EXEC_OFFSET = 24,
  T_EXEC_SIZE = 32,
  T_FLAGS = 40,
  T_RESERVED = 44,
  T_KEY_ID = 48,
  T_DATA_OFFSET = 56,
  T_DATA_SIZE = 64,
  T_DATA_CHECK = 72,
  T_DATA_HASH = 88,
  T_HASH = 120,
  T_SIG = 152,
  T_SIZE = 216,
  T_VERSION = 220,
  T_END = 224,
};
_Static_assert(T_END + 8 == LOOM_VM_ARTIFACT_TRAILER_SIZE, "trailer layout");
#define FLAG_SIGNED 1u
#define HASH_BYTES 32u
#define CHECK_BYTES 16u /* XXH3-128 */
#define EXEC_HEADER_BYTES 24u /* "LOOMEXE\0", u32 version, u32 sections, u64 size (exec_io.c) */

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v) {
  wr32(p, (uint32_t)v);
  wr32(p + 4, (uint32_t)(v >> 32));
}

static loom_status sodium_ready(void) {
  if (sodium_init() < 0) return LOOM_ERROR(UNAVAILABLE, "libsodium failed to initialise");
  return LOOM_OK;
}

/* Reads exactly n bytes at `off`; a short read is the file being shorter than it said. */
static loom_status read_at(int fd, const char *path, void *buf, size_t n, uint64_t off, const char *what) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return LOOM_ERROR(IO_ERROR, "'%s': cannot read %s: %s", path, what, strerror(errno));
    if (r == 0) return BAD("'%s': the file ends inside %s (it changed while being read?)", path, what);
    got += (size_t)r;
  }
  return LOOM_OK;
}

/* BLAKE2b-256 of bytes [0, n) of the file, then of `tail` (tail_n bytes). */
static loom_status hash_file(int fd, const char *path, uint64_t n, const uint8_t *tail, size_t tail_n, uint8_t *out) {
  crypto_generichash_state h;
  crypto_generichash_init(&h, NULL, 0, HASH_BYTES);
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  if (!buf) return LOOM_OOM();
  loom_status st = LOOM_OK;
  for (uint64_t at = 0; at < n && !st; at += CHUNK) {
    size_t k = n - at < CHUNK ? (size_t)(n - at) : CHUNK;
    st = read_at(fd, path, buf, k, at, "its contents");
    if (!st) crypto_generichash_update(&h, buf, k);
  }
  free(buf);
  if (st) return st;
  if (tail_n) crypto_generichash_update(&h, tail, tail_n);
  crypto_generichash_final(&h, out, HASH_BYTES);
  return LOOM_OK;
}

/* The key id of a public key: the first 8 bytes of its BLAKE2b-256. */
static void key_id(const loom_vm_artifact_pubkey *pk, uint8_t out[8]) {
  uint8_t h[HASH_BYTES];
  crypto_generichash(h, HASH_BYTES, pk->bytes, sizeof pk->bytes, NULL, 0);
  memcpy(out, h, 8);
}

static void hex(const uint8_t *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* ---- ELF headers ------------------------------------------------------------------ */

/* The ELF part [0, elf_size) of the file is a 64-bit little-endian shared object for this
 * machine whose header tables and segments all lie inside it. */
static loom_status check_elf(int fd, const char *path, uint64_t elf_size) {
  Elf64_Ehdr eh;
  if (elf_size < sizeof eh) return BAD("'%s': the ELF part (%llu bytes) is shorter than an ELF header", path, (unsigned long long)elf_size);
  LOOM_PROPAGATE(read_at(fd, path, &eh, sizeof eh, 0, "the ELF header"));
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG)) return BAD("'%s': not an ELF file (bad magic)", path);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return BAD("'%s': ELF class %u, expected 64-bit (2)", path, eh.e_ident[EI_CLASS]);
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return BAD("'%s': ELF data encoding %u, expected little-endian (1)", path, eh.e_ident[EI_DATA]);
  if (eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT) return BAD("'%s': ELF version %u is not 1", path, eh.e_version);
  if (eh.e_type != ET_DYN) return BAD("'%s': ELF type %u is not a shared object (ET_DYN, 3)", path, eh.e_type);
  if (eh.e_machine != HOST_MACHINE)
    return BAD("'%s': ELF machine %u, this runtime runs on %s (%u)", path, eh.e_machine, HOST_MACHINE_NAME, HOST_MACHINE);
  if (eh.e_ehsize != sizeof(Elf64_Ehdr)) return BAD("'%s': ELF header size %u, expected %zu", path, eh.e_ehsize, sizeof(Elf64_Ehdr));
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum >= PN_XNUM)
    return BAD("'%s': ELF program headers: %u of %u bytes (expected 1..%u of %zu)", path, eh.e_phnum, eh.e_phentsize,
               PN_XNUM - 1, sizeof(Elf64_Phdr));
  uint64_t ph_end = eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
  if (eh.e_phoff > elf_size || ph_end > elf_size)
    return BAD("'%s': ELF program headers [%llu, %llu) lie outside the ELF part (%llu bytes): truncated?", path,
               (unsigned long long)eh.e_phoff, (unsigned long long)ph_end, (unsigned long long)elf_size);
  if (eh.e_shnum) {
    uint64_t sh_end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > elf_size || sh_end > elf_size)
      return BAD("'%s': ELF section headers [%llu, %llu) lie outside the ELF part (%llu bytes) or have a bad entry size: truncated?",
                 path, (unsigned long long)eh.e_shoff, (unsigned long long)sh_end, (unsigned long long)elf_size);
  }
  Elf64_Phdr ph[64];
  bool any_load = false;
  for (uint32_t i = 0; i < eh.e_phnum; i += 64) {
    uint32_t k = eh.e_phnum - i < 64 ? eh.e_phnum - i : 64;
    LOOM_PROPAGATE(read_at(fd, path, ph, k * sizeof *ph, eh.e_phoff + (uint64_t)i * sizeof *ph, "the ELF program headers"));
    for (uint32_t j = 0; j < k; j++) {
      const Elf64_Phdr *p = &ph[j];
      uint64_t end;
      if (__builtin_add_overflow(p->p_offset, p->p_filesz, &end) || end > elf_size)
        return BAD("'%s': ELF segment %u (type %u) covers file bytes [%llu, +%llu), outside the ELF part (%llu bytes): truncated?",
                   path, i + j, p->p_type, (unsigned long long)p->p_offset, (unsigned long long)p->p_filesz,
                   (unsigned long long)elf_size);
      if (p->p_type == PT_LOAD) {
        any_load = true;
        if (p->p_filesz > p->p_memsz)
          return BAD("'%s': ELF segment %u holds %llu file bytes in %llu bytes of memory", path, i + j,
                     (unsigned long long)p->p_filesz, (unsigned long long)p->p_memsz);
      }
    }
  }
  if (!any_load) return BAD("'%s': the ELF file has no loadable segment", path);
  return LOOM_OK;
}

/* ---- checking --------------------------------------------------------------------- */

loom_status loom_vm_artifact_check_fd(int fd, const char *path, const loom_vm_artifact_pubkey *trust,
                                      loom_vm_artifact_info *out) {
  memset(out, 0, sizeof *out);
  LOOM_PROPAGATE(sodium_ready());
  struct stat sb;
  if (fstat(fd, &sb) != 0) return LOOM_ERROR(IO_ERROR, "cannot stat '%s': %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) return LOOM_ERROR(INVALID_ARGUMENT, "'%s' is not a regular file: not an artifact", path);
  uint64_t size = (uint64_t)sb.st_size;
  if (size > LOOM_FILE_LIMIT_ARTIFACT)
    return LOOM_ERROR(OUT_OF_RANGE, "'%s' is %llu bytes, over the limit of %llu bytes for an artifact", path,
                      (unsigned long long)size, (unsigned long long)LOOM_FILE_LIMIT_ARTIFACT);
  const uint64_t T = LOOM_VM_ARTIFACT_TRAILER_SIZE;
  uint8_t t[LOOM_VM_ARTIFACT_TRAILER_SIZE];
  bool found = size >= T + sizeof(Elf64_Ehdr);
  if (found) LOOM_PROPAGATE(read_at(fd, path, t, T, size - T, "the trailer"));
  if (!found || memcmp(t + T_END, end_magic, 8))
    return BAD("'%s' is %llu bytes but ends without a Loom artifact trailer: truncated, not a Loom artifact, or written "
               "by a Loom older than trailer version %u (recompile it)", path, (unsigned long long)size,
               LOOM_VM_ARTIFACT_TRAILER_VERSION);
  if (rd32(t + T_VERSION) != LOOM_VM_ARTIFACT_TRAILER_VERSION || rd32(t + T_SIZE) != T)
    return BAD("'%s': artifact trailer version %u (%u bytes) is not supported: this runtime reads version %u (%llu bytes)",
               path, rd32(t + T_VERSION), rd32(t + T_SIZE), LOOM_VM_ARTIFACT_TRAILER_VERSION, (unsigned long long)T);
  if (memcmp(t + T_MAGIC, start_magic, 8)) return BAD("'%s': the artifact trailer's magic is wrong", path);
  uint64_t fsize = rd64(t + T_FILE_SIZE);
  if (fsize != size)
    return BAD("'%s' is %llu bytes, its artifact trailer records %llu: the file was %s after it was written", path,
               (unsigned long long)size, (unsigned long long)fsize, size < fsize ? "truncated" : "extended");
  out->file_size = size;
  out->abi_version = rd32(t + T_ABI);
  out->exec_version = rd32(t + T_EXEC_VERSION);
  out->exec_offset = rd64(t + T_EXEC_OFFSET);
  out->exec_size = rd64(t + T_EXEC_SIZE);
  uint32_t flags = rd32(t + T_FLAGS);
  out->is_signed = flags & FLAG_SIGNED;
  memcpy(out->key_id, t + T_KEY_ID, 8);
  if ((flags & ~FLAG_SIGNED) || rd32(t + T_RESERVED))
    return BAD("'%s': the artifact trailer has unknown flags 0x%x or reserved bits set", path, flags);
  if (!out->is_signed) {
    static const uint8_t zeros[64];
    if (memcmp(t + T_SIG, zeros, 64) || memcmp(t + T_KEY_ID, zeros, 8))
      return BAD("'%s': the artifact is marked unsigned but carries a signature or key id", path);
  }
  if (out->abi_version != LOOM_KERNEL_ABI_VERSION)
    return BAD("'%s': kernels were built for kernel ABI %u, this runtime has %u (recompile the model)", path,
               out->abi_version, LOOM_KERNEL_ABI_VERSION);
  if (out->exec_version != LOOM_VM_FORMAT_VERSION)
    return BAD("'%s': the executable has format version %u, this runtime reads version %u (recompile the model)", path,
               out->exec_version, LOOM_VM_FORMAT_VERSION);
  out->data_offset = rd64(t + T_DATA_OFFSET);
  out->data_size = rd64(t + T_DATA_SIZE);
  memcpy(out->data_check, t + T_DATA_CHECK, CHECK_BYTES);
  memcpy(out->data_hash, t + T_DATA_HASH, HASH_BYTES);
  uint64_t elf_size = size - T, exec_end, data_end;
  if (out->data_size || out->data_offset) {
    if (!out->data_size || out->data_offset % LOOM_VM_ARTIFACT_DATA_ALIGN ||
        __builtin_add_overflow(out->data_offset, out->data_size, &data_end) || data_end != size - T ||
        out->data_offset < sizeof(Elf64_Ehdr))
      return BAD("'%s': the trailer places the DATA region at [%llu, +%llu), which does not end where the trailer "
                 "starts (%llu) at an offset aligned to %u bytes", path, (unsigned long long)out->data_offset,
                 (unsigned long long)out->data_size, (unsigned long long)(size - T), LOOM_VM_ARTIFACT_DATA_ALIGN);
    elf_size = out->data_offset;
  }
  if (out->exec_offset % 64 || __builtin_add_overflow(out->exec_offset, out->exec_size, &exec_end) || exec_end > elf_size ||
      out->exec_size < EXEC_HEADER_BYTES)
    return BAD("'%s': the trailer places the executable at [%llu, +%llu), which is not 64-byte aligned inside the ELF part "
               "(%llu bytes)", path, (unsigned long long)out->exec_offset, (unsigned long long)out->exec_size,
               (unsigned long long)elf_size);
  LOOM_PROPAGATE(check_elf(fd, path, elf_size));
  uint8_t eh[EXEC_HEADER_BYTES];
  LOOM_PROPAGATE(read_at(fd, path, eh, sizeof eh, out->exec_offset, "the executable's header"));
  if (memcmp(eh, "LOOMEXE", 8) || rd32(eh + 8) != out->exec_version || rd64(eh + 16) != out->exec_size)
    return BAD("'%s': no executable of format version %u and %llu bytes at offset %llu, where the trailer places it", path,
               out->exec_version, (unsigned long long)out->exec_size, (unsigned long long)out->exec_offset);
  /* the content hash over every byte, then the signature */
  uint8_t want[HASH_BYTES], got[HASH_BYTES];
  LOOM_PROPAGATE(hash_file(fd, path, elf_size, t, T_HASH, got));
  memcpy(want, t + T_HASH, HASH_BYTES);
  if (sodium_memcmp(want, got, HASH_BYTES))
    return BAD("'%s': content hash mismatch: the file was modified or corrupted after it was written", path);
  if (trust) {
    char kid[17], tid[17];
    uint8_t tk[8];
    key_id(trust, tk);
    hex(tk, 8, tid);
    hex(out->key_id, 8, kid);
    if (!out->is_signed)
      return LOOM_ERROR(FAILED_PRECONDITION, "'%s' is not signed, and a trusted key (id %s) is required", path, tid);
    if (memcmp(tk, out->key_id, 8))
      return LOOM_ERROR(FAILED_PRECONDITION, "'%s' is signed by key %s, not by the trusted key %s", path, kid, tid);
    uint8_t msg[sizeof sign_context + HASH_BYTES];
    memcpy(msg, sign_context, sizeof sign_context);
    memcpy(msg + sizeof sign_context, got, HASH_BYTES);
    if (crypto_sign_verify_detached(t + T_SIG, msg, sizeof msg, trust->bytes) != 0)
      return BAD("'%s': the signature does not verify with the trusted key %s: the artifact was tampered with", path, tid);
  }
  return LOOM_OK;
}

/* XXH3-128 of n bytes as 16 big-endian bytes (XXH128_canonicalFromHash). */
static void xxh_digest(const XXH128_hash_t *h, uint8_t out[CHECK_BYTES]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, *h);
  memcpy(out, c.digest, CHECK_BYTES);
}

loom_status loom_vm_artifact_map_data(int fd, const char *path, const loom_vm_artifact_info *info, bool verify_hash,
                                      const uint8_t **out) {
  *out = NULL;
  if (!info->data_size) return LOOM_OK;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != info->file_size)
    return BAD("'%s' changed after it was checked (it is no longer %llu bytes)", path, (unsigned long long)info->file_size);
  if (info->data_size > SIZE_MAX) return LOOM_ERROR(OUT_OF_RANGE, "'%s': the DATA region does not fit in memory", path);
  void *p = mmap(NULL, (size_t)info->data_size, PROT_READ, MAP_SHARED, fd, (off_t)info->data_offset);
  if (p == MAP_FAILED) return LOOM_ERROR(IO_ERROR, "'%s': cannot map its DATA region (%llu bytes): %s", path,
                                         (unsigned long long)info->data_size, strerror(errno));
  /* The weights: every call reads them all. Ask the disk for them now (asynchronously: open
   * does not wait) rather than one page fault at a time in the first call — a compile writes
   * DATA past the page cache (file_write.h): the 1B decoder's first call with its artifact
   * evicted 9.2 -> 4.3 s. */
  (void)madvise(p, (size_t)info->data_size, MADV_WILLNEED);
  const uint8_t *d = p;
  loom_status st = LOOM_OK;
  if (!verify_hash) {
    /* nothing read: each constant is checked at its first use by the XXH3-64 its record in
     * the executable holds (loom_vm_exec_const_check), which the content hash covers */
    *out = d;
    return LOOM_OK;
  }
  uint8_t got[HASH_BYTES];
  XXH128_hash_t h = XXH3_128bits(d, (size_t)info->data_size);
  xxh_digest(&h, got);
  if (memcmp(got, info->data_check, CHECK_BYTES))
    st = BAD("'%s': its DATA region (the weights, %llu bytes) does not match its check: the file was modified or "
             "corrupted after it was written", path, (unsigned long long)info->data_size);
  if (!st) {
    crypto_generichash(got, HASH_BYTES, d, info->data_size, NULL, 0);
    if (sodium_memcmp(got, info->data_hash, HASH_BYTES))
      st = BAD("'%s': its DATA region (the weights) does not match its signed hash: the artifact was tampered with", path);
  }
  if (st) {
    munmap(p, (size_t)info->data_size);
    return st;
  }
  *out = d;
  return LOOM_OK;
}

void loom_vm_artifact_unmap_data(const uint8_t *data, uint64_t size) {
  if (data && size) munmap((void *)data, (size_t)size);
}

/* ---- sealing ---------------------------------------------------------------------- */

/* Writes DATA after the ELF part, digesting it on the way (loom_vm_exec_data_each's sink). */
typedef struct data_sink {
  loom_file_writer *w;          /* the file (file_write.h: gigabytes of weights bypass the page cache) */
  uint64_t at;                  /* file offset of the next byte */
  XXH3_state_t *xxh;            /* the DATA check */
  bool hash;                    /* also the DATA hash (a signed artifact: only a trusted key reads it) */
  crypto_generichash_state h;   /* the DATA hash */
  int err;                      /* errno of a failed write */
} data_sink;

static int sink_put(void *ctx, const void *p, size_t n) {
  data_sink *k = ctx;
  static const uint8_t zeros[1 << 16];
  while (n) {
    size_t m = p ? (n < (1u << 24) ? n : 1u << 24) : (n < sizeof zeros ? n : sizeof zeros);
    const void *src = p ? p : zeros;
    XXH3_128bits_update(k->xxh, src, m);
    if (k->hash) crypto_generichash_update(&k->h, src, m);
    if ((k->err = loom_file_writer_put(k->w, src, m))) return k->err;
    k->at += m;
    n -= m;
    if (p) p = (const uint8_t *)p + m;
  }
  return 0;
}

/* Appends zeros up to the next multiple of LOOM_VM_ARTIFACT_DATA_ALIGN, then e's DATA; its
 * place and digests go into the trailer t: the check always, the hash when `hash` (a signed
 * artifact; unsigned, the field stays zero, as nothing reads it: a BLAKE2b pass over 4 GB of
 * weights costs several seconds). */
static loom_status write_data(int fd, const char *path, uint64_t elf_size, const loom_vm_exec *e, bool hash, uint8_t *t,
                              uint64_t *end) {
  uint64_t off = (elf_size + LOOM_VM_ARTIFACT_DATA_ALIGN - 1) / LOOM_VM_ARTIFACT_DATA_ALIGN * LOOM_VM_ARTIFACT_DATA_ALIGN;
  if (ftruncate(fd, (off_t)off) != 0)
    return LOOM_ERROR(IO_ERROR, "cannot pad '%s' for its DATA region: %s", path, strerror(errno));
  data_sink k = {.at = off, .xxh = XXH3_createState(), .hash = hash};
  if (!k.xxh || loom_file_writer_open(fd, off, e->data_len, LOOM_FILE_WRITE_DIRECT_MIN, &k.w)) {
    XXH3_freeState(k.xxh);
    return LOOM_OOM();
  }
  XXH3_128bits_reset(k.xxh);
  crypto_generichash_init(&k.h, NULL, 0, HASH_BYTES);
  int r = loom_vm_exec_data_each(e, sink_put, &k);
  int c = loom_file_writer_close(k.w);
  if (!r && c) r = k.err = c;
  XXH128_hash_t h = XXH3_128bits_digest(k.xxh);
  XXH3_freeState(k.xxh);
  if (r) return LOOM_ERROR(IO_ERROR, "cannot write the DATA region of '%s': %s", path, strerror(k.err ? k.err : EIO));
  wr64(t + T_DATA_OFFSET, off);
  wr64(t + T_DATA_SIZE, k.at - off);
  xxh_digest(&h, t + T_DATA_CHECK);
  if (hash) crypto_generichash_final(&k.h, t + T_DATA_HASH, HASH_BYTES);
  *end = k.at;
  return LOOM_OK;
}


/* The offset of `exec` in the file: it is 64-byte aligned there (the linker keeps the
 * section's alignment in file offsets), so only those offsets are compared. */
static loom_status find_exec(int fd, const char *path, uint64_t size, const uint8_t *exec, size_t len, uint64_t *out) {
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf) return LOOM_OOM();
  loom_status st = BAD("'%s': the linked artifact does not hold the executable at a 64-byte aligned offset", path);
  uint8_t head[64];
  size_t hn = len < sizeof head ? len : sizeof head;
  for (uint64_t off = 0; off + len <= size; off += 64) {
    if (read_at(fd, path, head, hn, off, "the artifact") != LOOM_OK) break;
    if (memcmp(head, exec, hn)) continue;
    loom_status rs = read_at(fd, path, buf, len, off, "the artifact");
    if (rs) {
      loom_status_free(st);
      st = rs;
      break;
    }
    if (!memcmp(buf, exec, len)) {
      loom_status_free(st);
      st = LOOM_OK;
      *out = off;
      break;
    }
  }
  free(buf);
  return st;
}

loom_status loom_vm_artifact_seal(const char *path, const uint8_t *exec, size_t exec_len, const loom_vm_exec *data,
                                  const loom_vm_artifact_seckey *sign) {
  LOOM_PROPAGATE(sodium_ready());
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return LOOM_ERROR(IO_ERROR, "cannot open '%s' to seal it: %s", path, strerror(errno));
  struct stat sb;
  loom_status st = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? LOOM_OK : LOOM_ERROR(IO_ERROR, "'%s' is not a regular file", path);
  uint64_t size = st ? 0 : (uint64_t)sb.st_size, exec_off = 0;
  if (!st) st = check_elf(fd, path, size);
  if (!st) st = find_exec(fd, path, size, exec, exec_len, &exec_off);
  uint8_t t[LOOM_VM_ARTIFACT_TRAILER_SIZE] = {0};
  uint64_t end = size; /* where the trailer goes */
  if (!st && data && data->data_len) st = write_data(fd, path, size, data, sign != NULL, t, &end);
  if (!st) {
    memcpy(t + T_MAGIC, start_magic, 8);
    wr32(t + T_ABI, LOOM_KERNEL_ABI_VERSION);
    wr32(t + T_EXEC_VERSION, exec_len >= 12 ? rd32(exec + 8) : 0);
    wr64(t + T_FILE_SIZE, end + LOOM_VM_ARTIFACT_TRAILER_SIZE);
    wr64(t + T_EXEC_OFFSET, exec_off);
    wr64(t + T_EXEC_SIZE, exec_len);
    if (sign) {
      loom_vm_artifact_pubkey pk;
      crypto_sign_ed25519_sk_to_pk(pk.bytes, sign->bytes);
      wr32(t + T_FLAGS, FLAG_SIGNED);
      key_id(&pk, t + T_KEY_ID);
    }
    wr32(t + T_SIZE, LOOM_VM_ARTIFACT_TRAILER_SIZE);
    wr32(t + T_VERSION, LOOM_VM_ARTIFACT_TRAILER_VERSION);
    memcpy(t + T_END, end_magic, 8);
    /* the ELF part: every byte before the DATA region (its padding included), or before the trailer */
    st = hash_file(fd, path, end == size ? size : rd64(t + T_DATA_OFFSET), t, T_HASH, t + T_HASH);
  }
  if (!st && sign) {
    uint8_t msg[sizeof sign_context + HASH_BYTES];
    memcpy(msg, sign_context, sizeof sign_context);
    memcpy(msg + sizeof sign_context, t + T_HASH, HASH_BYTES);
    crypto_sign_detached(t + T_SIG, NULL, msg, sizeof msg, sign->bytes);
  }
  if (!st && pwrite(fd, t, sizeof t, (off_t)end) != (ssize_t)sizeof t)
    st = LOOM_ERROR(IO_ERROR, "cannot append the trailer to '%s': %s", path, strerror(errno));
  if (close(fd) != 0 && !st) st = LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  return st;
}

/* ---- keys ------------------------------------------------------------------------- */

static const char pub_tag[] = "loom-ed25519-public-key";
static const char sec_tag[] = "loom-ed25519-secret-key";

/* Writes "TAG HEX\n" to a new file `path` of mode `mode`. */
static loom_status write_key(const char *path, const char *tag, const uint8_t *key, size_t n, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return LOOM_ERROR(IO_ERROR, "cannot create '%s': %s", path, strerror(errno));
  char line[256];
  size_t tl = strlen(tag);
  memcpy(line, tag, tl);
  line[tl] = ' ';
  hex(key, n, line + tl + 1);
  size_t len = tl + 1 + 2 * n;
  line[len++] = '\n';
  bool ok = write(fd, line, len) == (ssize_t)len;
  sodium_memzero(line, sizeof line);
  ok &= close(fd) == 0;
  return ok ? LOOM_OK : LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
}

loom_status loom_vm_artifact_keygen(const char *path) {
  LOOM_PROPAGATE(sodium_ready());
  char pub[4096];
  if (snprintf(pub, sizeof pub, "%s.pub", path) >= (int)sizeof pub) return LOOM_ERROR(INVALID_ARGUMENT, "key path too long");
  loom_vm_artifact_pubkey pk;
  loom_vm_artifact_seckey sk;
  crypto_sign_keypair(pk.bytes, sk.bytes);
  loom_status st = write_key(path, sec_tag, sk.bytes, sizeof sk.bytes, 0600);
  sodium_memzero(&sk, sizeof sk);
  if (!st) {
    st = write_key(pub, pub_tag, pk.bytes, sizeof pk.bytes, 0644);
    if (st) unlink(path);
  }
  return st;
}

/* Reads a key file "TAG HEX" (trailing whitespace allowed) of n key bytes. */
static loom_status read_key(const char *path, const char *tag, const char *what, uint8_t *out, size_t n) {
  LOOM_PROPAGATE(sodium_ready());
  char *text = NULL;
  size_t len = 0;
  LOOM_PROPAGATE(loom_file_read_limited(path, what, 4096, &text, &len));
  size_t tl = strlen(tag);
  const char *hx = text + tl + 1;
  size_t hl = len > tl + 1 ? len - tl - 1 : 0;
  while (hl && (hx[hl - 1] == '\n' || hx[hl - 1] == '\r' || hx[hl - 1] == ' ')) hl--;
  size_t got = 0;
  loom_status st = LOOM_OK;
  if (len < tl + 1 || memcmp(text, tag, tl) || text[tl] != ' ' || hl != 2 * n ||
      sodium_hex2bin(out, n, hx, hl, NULL, &got, NULL) != 0 || got != n)
    st = LOOM_ERROR(INVALID_ARGUMENT, "'%s' is not a %s file (one line: \"%s\" and %zu hex digits; make one with `loom keygen`)",
                    path, what, tag, 2 * n);
  sodium_memzero(text, len);
  free(text);
  return st;
}

loom_status loom_vm_artifact_pubkey_read(const char *path, loom_vm_artifact_pubkey *out) {
  return read_key(path, pub_tag, "public key", out->bytes, sizeof out->bytes);
}

loom_status loom_vm_artifact_seckey_read(const char *path, loom_vm_artifact_seckey *out) {
  return read_key(path, sec_tag, "secret key", out->bytes, sizeof out->bytes);
}
