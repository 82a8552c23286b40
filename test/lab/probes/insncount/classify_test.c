/* classify_test: insncount.c's disassembly classifier against the forms QEMU 7.2's capstone
 * printer gives (AT&T syntax). A lab tool's check, run by hand after changing classify():
 *   gcc -O1 -o /tmp/classify_test classify_test.c -lpthread && /tmp/classify_test
 * It exits 1 naming each line whose counts differ. */
#include "insncount.c"

/* the plugin API the included file refers to: never called here */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb) { (void)id; (void)cb; }
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr, uint64_t imm)
{
    (void)tb; (void)op; (void)ptr; (void)imm;
}
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb) { (void)tb; return 0; }
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb) { (void)tb; return 0; }
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx) { (void)tb; (void)idx; return NULL; }
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn) { (void)insn; return NULL; }
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *u) { (void)id; (void)cb; (void)u; }
void qemu_plugin_outs(const char *s) { (void)s; }

int main(void)
{
    static const struct {
        const char *disas;
        uint32_t mem, vec, sys, ind; /* as the last instruction of its block */
    } cases[] = {
        {"movq 0x10(%rax), %rdx", 1, 0, 0, 0},
        {"leaq 0x10(%rax), %rdx", 0, 0, 0, 0},
        {"nopw 0(%rax,%rax)", 0, 0, 0, 0},
        {"retq", 1, 0, 0, 1},
        {"jmpq *%rax", 0, 0, 0, 1},
        {"callq *0x8(%rbx)", 1, 0, 0, 1},
        {"jmp 0xffffffff81000000", 0, 0, 0, 0},
        {"callq 0x401000", 1, 0, 0, 0},
        {"pushq %rbp", 1, 0, 0, 0},
        {"lock cmpxchgq %rcx, (%rdx)", 1, 0, 1, 0},
        {"incl %eax", 0, 0, 0, 0},
        {"inb %dx, %al", 0, 0, 1, 0},
        {"syscall", 0, 0, 1, 1},
        {"sysretq", 0, 0, 1, 1},
        {"xsaves64 (%rdi)", 1, 0, 1, 0},
        {"vmovdqu (%rsi), %ymm0", 1, 1, 0, 0},
        {"rep stosb %al, (%rdi)", 1, 0, 0, 0},
        {"movq %rax, %cr3", 0, 0, 1, 0},
        {"xchgq %rax, (%rdx)", 1, 0, 1, 0},
        {"iretq", 1, 0, 1, 1},
        {"hlt", 0, 0, 1, 0},
        {"pxor %xmm1, %xmm1", 0, 1, 0, 0},
        {"fxrstor64 (%rsi)", 1, 0, 1, 0},
        {"xsave (%rdi)", 1, 0, 1, 0},
        {"int3", 0, 0, 0, 0},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct block b = {0};
        classify(&b, cases[i].disas, 1);
        if (b.mem != cases[i].mem || b.vec != cases[i].vec || b.sys != cases[i].sys || b.ind != cases[i].ind) {
            printf("%s: mem %u vec %u sys %u ind %u, want %u %u %u %u\n", cases[i].disas, b.mem, b.vec, b.sys, b.ind,
                   cases[i].mem, cases[i].vec, cases[i].sys, cases[i].ind);
            bad = 1;
        }
    }
    return bad;
}
