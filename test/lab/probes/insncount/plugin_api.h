/* The subset of QEMU's TCG plugin interface (API version 1, QEMU 7.2) that insncount.c uses,
 * declared here because Debian's qemu packages ship no plugin header. The functions are resolved
 * from the qemu-system binary when it loads the plugin (-plugin FILE.so,...). */
#ifndef INSNCOUNT_PLUGIN_API_H
#define INSNCOUNT_PLUGIN_API_H
#include <stddef.h>
#include <stdint.h>

#define PLUGIN_EXPORT __attribute__((visibility("default")))
#define PLUGIN_API_VERSION 1

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* opaque here: not read */
struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn); /* malloc'd: free it */
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);

#endif
