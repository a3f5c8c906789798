/* artifact.h — the Loom trailer of an AOT artifact: what is checked before any of the
 * artifact's code can run, and signatures.
 *
 * An AOT artifact (kernel_abi.h) is a shared object: native code. dlopen runs its
 * constructors and maps its segments, so a truncated or hostile file can crash or act
 * before Loom sees a byte of it. The linker's output is therefore sealed: a trailer is
 * appended to the ELF file after linking (the dynamic loader maps only what the program
 * headers name and never reads it), holding
 *
 *     offset size
 *          0    8  magic "LOOMART\0"
 *          8    4  kernel ABI version (LOOM_KERNEL_ABI_VERSION)
 *         12    4  executable format version (LOOM_VM_FORMAT_VERSION)
 *         16    8  file size: the whole artifact, trailer included
 *         24    8  executable offset in the file (64-byte aligned)
 *         32    8  executable size
 *         40    4  flags (bit 0: signed)
 *         44    4  reserved, 0
 *         48    8  key id: the first 8 bytes of BLAKE2b-256 of the signer's public key (0: unsigned)
 *         56   32  content hash: BLAKE2b-256 (libsodium crypto_generichash) of every byte of the
 *                  file before this field (the ELF and the trailer's fields above)
 *         88   64  Ed25519 signature (libsodium crypto_sign_detached) of
 *                  "loom-artifact-v1" || content hash, or zeros when unsigned
 *        152    4  trailer size (LOOM_VM_ARTIFACT_TRAILER_SIZE)
 *        156    4  trailer format version (LOOM_VM_ARTIFACT_TRAILER_VERSION)
 *        160    8  "\0LOOMEND": the file's last bytes
 *
 * loom_vm_artifact_check reads the file with read(2) only, before dlopen: a regular file
 * within LOOM_FILE_LIMIT_ARTIFACT; the trailer's end marker, version and size; the file
 * exactly as long as the trailer records; sane ELF headers (64-bit little-endian shared
 * object for this machine, header tables and every segment inside the ELF part); the
 * executable's header (magic, format version, its own size) at the recorded offset; the
 * content hash over the whole file; and, with a trusted key, the signature. What this does
 * and does not guarantee is in docs/vm.md ("Trust model").
 *
 * vm/artifact.c is the only file that includes libsodium (scripts/check-layers). */
#ifndef LOOM_VM_ARTIFACT_H
#define LOOM_VM_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define LOOM_VM_ARTIFACT_TRAILER_VERSION 1u
#define LOOM_VM_ARTIFACT_TRAILER_SIZE 168u
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

/* Seals the shared object `path` that the linker just wrote: finds `exec` (exec_len bytes,
 * 64-byte aligned in the file) in it, checks its ELF headers, and appends the trailer,
 * signed with `sign` when it is not NULL. The result passes loom_vm_artifact_check_fd. */
LOOM_MUST_USE loom_status loom_vm_artifact_seal(const char *path, const uint8_t *exec, size_t exec_len,
                                                const loom_vm_artifact_seckey *sign);

/* Makes a new key pair: the secret key to `path` (mode 0600) and the public key to
 * `path`.pub. Key files are one line of text: "loom-ed25519-secret-key HEX" /
 * "loom-ed25519-public-key HEX". Refuses to overwrite an existing file. */
LOOM_MUST_USE loom_status loom_vm_artifact_keygen(const char *path);
LOOM_MUST_USE loom_status loom_vm_artifact_pubkey_read(const char *path, loom_vm_artifact_pubkey *out);
LOOM_MUST_USE loom_status loom_vm_artifact_seckey_read(const char *path, loom_vm_artifact_seckey *out);

#endif
