/* artifact.h — the Loom trailer of an AOT artifact: what is checked before any of the
 * artifact's code can run, the weights region, and signatures.
 *
 * An AOT artifact (kernel_abi.h) is a shared object: native code. dlopen runs its
 * constructors and maps its segments, so a truncated or hostile file can crash or act
 * before Loom sees a byte of it. The linker's output is therefore sealed. The file is
 *
 *     [ELF part: the linked shared object, the executable inside it without its DATA]
 *     [zeros up to LOOM_VM_ARTIFACT_DATA_ALIGN]
 *     [DATA region: the tensor constants (weights) at their offsets, mapped at open]
 *     [trailer]
 *
 * (no DATA region when the executable holds its constants itself: data size 0). The
 * dynamic loader maps only what the program headers name and never reads past the ELF
 * part; the weights stay out of the linker's way and are mapped read-only and shared
 * between the processes that open the artifact. The trailer:
 *
 *     offset size
 *          0    8  magic "LOOMART\0"
 *          8    4  kernel ABI version (LOOM_KERNEL_ABI_VERSION)
 *         12    4  executable format version (LOOM_VM_FORMAT_VERSION)
 *         16    8  file size: the whole artifact, trailer included
 *         24    8  executable offset in the file (64-byte aligned, inside the ELF part)
 *         32    8  executable size
 *         40    4  flags (bit 0: signed)
 *         44    4  reserved, 0
 *         48    8  key id: the first 8 bytes of BLAKE2b-256 of the signer's public key (0: unsigned)
 *         56    8  DATA offset (a multiple of LOOM_VM_ARTIFACT_DATA_ALIGN; 0 with size 0: none)
 *         64    8  DATA size
 *         72   16  DATA check: XXH3-128 of the DATA region, checked when a key is trusted
 *         88   32  DATA hash: BLAKE2b-256 of the DATA region (signed artifacts; else 0), checked
 *                  when a key is trusted
 *        120   32  content hash: BLAKE2b-256 (libsodium crypto_generichash) of the ELF part
 *                  (every byte before the DATA region, or before the trailer) and of the
 *                  trailer's fields above: it covers the DATA check and hash
 *        152   64  Ed25519 signature (libsodium crypto_sign_detached) of
 *                  "loom-artifact-v2" || content hash, or zeros when unsigned
 *        216    4  trailer size (LOOM_VM_ARTIFACT_TRAILER_SIZE)
 *        220    4  trailer format version (LOOM_VM_ARTIFACT_TRAILER_VERSION)
 *        224    8  "\0LOOMEND": the file's last bytes
 *
 * Why the weights are not hashed at open: opening a 1B-parameter model must not read 4 GB
 * (XXH3 over 4.1 GB took 0.5 s, 92% of the open; BLAKE2b runs at ~1 GB/s). An unsigned
 * artifact's content hash only detects damage — whoever can change the file can recompute
 * it — so damage to the weights is caught as well by a check per weight taken when it is
 * first used: each constant's record in the executable (inside the ELF part, covered by the
 * content hash) holds the XXH3-64 of its bytes, and the VM compares it at the constant's
 * first TCONST (vm/exec.h, loom_vm_exec_const_check), naming the tensor. Only the zero
 * padding between constants, which nothing reads, goes unchecked. A signed artifact binds
 * its weights cryptographically: with a trusted key the DATA check and hash are checked at
 * open.
 *
 * loom_vm_artifact_check_fd reads the file with read(2) only, before dlopen: a regular file
 * within LOOM_FILE_LIMIT_ARTIFACT; the trailer's end marker, version and size; the file
 * exactly as long as the trailer records; the DATA region's place; sane ELF headers (64-bit
 * little-endian shared object for this machine, header tables and every segment inside the
 * ELF part); the executable's header (magic, format version, its own size) at the recorded
 * offset; the content hash; and, with a trusted key, the signature.
 * loom_vm_artifact_map_data then maps the DATA region (and checks its digests with a trusted
 * key). What this does
 * and does not guarantee is in docs/vm.md ("Trust model").
 *
 * vm/artifact.c is the only file that includes libsodium; it and vm/exec_io.c (the weights'
 * checks) include xxhash (scripts/check-layers). */
#ifndef LOOM_VM_ARTIFACT_H
#define LOOM_VM_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define LOOM_VM_ARTIFACT_TRAILER_VERSION 2u
#define LOOM_VM_ARTIFACT_TRAILER_SIZE 232u
#define LOOM_VM_ARTIFACT_DATA_ALIGN 65536u /* DATA region offset: a page on every host (4 KiB .. 64 KiB) */
#define LOOM_VM_ARTIFACT_PUBLIC_KEY_BYTES 32u /* Ed25519 public key */
#define LOOM_VM_ARTIFACT_SECRET_KEY_BYTES 64u /* Ed25519 secret key (seed and public key) */

/* An Ed25519 key pair's halves, as read from key files. */
typedef struct loom_vm_artifact_pubkey {
  uint8_t bytes[LOOM_VM_ARTIFACT_PUBLIC_KEY_BYTES];
} loom_vm_artifact_pubkey;
typedef struct loom_vm_artifact_seckey {
  uint8_t bytes[LOOM_VM_ARTIFACT_SECRET_KEY_BYTES];
} loom_vm_artifact_seckey;

/* What the trailer of a checked artifact says. */
typedef struct loom_vm_artifact_info {
  uint64_t file_size;   /* bytes, trailer included */
  uint64_t exec_offset; /* where the executable's bytes are in the file */
  uint64_t exec_size;   /* their length */
  uint64_t data_offset; /* where the DATA region is (0 with data_size 0: none) */
  uint64_t data_size;   /* its length */
  uint8_t data_check[16]; /* its XXH3-128 */
  uint8_t data_hash[32];  /* its BLAKE2b-256 */
  uint32_t abi_version; /* kernel ABI */
  uint32_t exec_version;/* executable format */
  bool is_signed;       /* carries a signature */
  uint8_t key_id[8];    /* the signer's key id (zeros when unsigned) */
} loom_vm_artifact_info;

/* Checks the artifact open on `fd` (named `path` in errors) as the banner says, reading it
 * and running none of it. `trust` NULL: any intact artifact, signed or not, passes; else
 * only one signed by that key. Errors are DATA_LOSS (corrupt, truncated, tampered),
 * FAILED_PRECONDITION (unsigned or signed by another key while a key is trusted),
 * INVALID_ARGUMENT / OUT_OF_RANGE (not a regular file, too large), naming what is wrong:
 *     'm.so' is 20000 bytes but ends without a Loom artifact trailer: truncated, not a Loom
 *       artifact, or written by a Loom older than trailer version 1 (recompile it) */
LOOM_MUST_USE loom_status loom_vm_artifact_check_fd(int fd, const char *path, const loom_vm_artifact_pubkey *trust,
                                                    loom_vm_artifact_info *out);

/* The DATA region of the artifact checked into `info` (open on fd), mapped read-only and
 * shared. Without `verify_hash` nothing of it is read (its constants are checked at their
 * first use); with it (a trusted key) its XXH3-128 and BLAKE2b-256 are compared with the
 * trailer's. *out is NULL when there is no region; else unmap it with
 * loom_vm_artifact_unmap_data(*out, info->data_size). A file changed after the check is
 * refused here; one truncated while mapped raises SIGBUS on access, like any mapped file. */
LOOM_MUST_USE loom_status loom_vm_artifact_map_data(int fd, const char *path, const loom_vm_artifact_info *info,
                                                    bool verify_hash, const uint8_t **out);
void loom_vm_artifact_unmap_data(const uint8_t *data, uint64_t size);

typedef struct loom_vm_exec loom_vm_exec;

/* Seals the shared object `path` that the linker just wrote: finds `exec` (exec_len bytes,
 * 64-byte aligned in the file) in it, checks its ELF headers, appends `data`'s DATA (the
 * executable `exec` was written from with loom_vm_exec_write_no_data; NULL: exec holds its
 * constants) as the page-aligned DATA region, and then the trailer, signed with `sign` when it
 * is not NULL. The result passes loom_vm_artifact_check_fd. */
LOOM_MUST_USE loom_status loom_vm_artifact_seal(const char *path, const uint8_t *exec, size_t exec_len,
                                                const loom_vm_exec *data, const loom_vm_artifact_seckey *sign);

/* Makes a new key pair: the secret key to `path` (mode 0600) and the public key to
 * `path`.pub. Key files are one line of text: "loom-ed25519-secret-key HEX" /
 * "loom-ed25519-public-key HEX". Refuses to overwrite an existing file. */
LOOM_MUST_USE loom_status loom_vm_artifact_keygen(const char *path);
LOOM_MUST_USE loom_status loom_vm_artifact_pubkey_read(const char *path, loom_vm_artifact_pubkey *out);
LOOM_MUST_USE loom_status loom_vm_artifact_seckey_read(const char *path, loom_vm_artifact_seckey *out);

#endif
