/* insncount: a QEMU TCG plugin that counts guest instructions per translated block, so that two
 * runs of the same work (rdmablkd against nvmet-tcp at QD1, say) can be compared by instructions
 * executed instead of by time, which TCG distorts.
 *
 *   qemu-system-x86_64 ... -plugin /path/insncount.so,dir=/host/dir
 *
 * Each translated block gets an inline counter (one add per execution, no helper call). A thread
 * polls DIR for mark.1, mark.2, ...: when mark.N appears it writes dump.N (via dump.N.tmp and a
 * rename), one line per block that ran, its executions cumulative since boot (the form below). The guest
 * creates the marks through the 9p share; the difference of two dumps is what ran between them.
 *
 * TCG does not charge every guest instruction alike, so each block also carries four static counts
 * taken from its disassembly when it is first translated; a dump line is
 * "VADDR N_INSNS EXECS MEM VEC SYS IND": MEM its instructions that touch memory (an explicit memory
 * operand, or the stack or a string: push, pop, call, ret, movs, ...; not lea or nop), each a
 * softmmu TLB check in translated code; VEC those on SSE/AVX registers (mostly helper calls); SYS
 * the privileged and serialising ones that leave translated code (syscall, sysret, iret, swapgs,
 * xsave, xrstor, cpuid, rdmsr, wrmsr, mov to or from a control register, hlt, in, out, lock
 * prefixes); IND 1 when the block ends in an indirect jump, call or a return, whose next block
 * TCG finds by a hash lookup (helper_lookup_tb_ptr) instead of a chained jump. classify_test.c
 * checks the classifier against capstone's AT&T forms.
 * Build: gcc -O2 -shared -fPIC -fvisibility=hidden -o insncount.so insncount.c -lpthread */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_api.h"

PLUGIN_EXPORT int qemu_plugin_version = PLUGIN_API_VERSION;

struct block {
    uint64_t vaddr;
    uint64_t insns;
    uint64_t execs; /* the inline add's target: must never move */
    uint32_t mem, vec, sys, ind; /* static counts of the first translation (see above) */
    int classified;              /* they are set: a block translated again keeps them */
};

#define CHUNK 65536

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct block **chunks; /* blocks live in chunks of CHUNK, never freed or moved */
static size_t nchunks, nblocks;
static struct block **table; /* open addressing over (vaddr, insns) */
static size_t tablecap;
static char dir[4096];
static volatile int stopping;
static pthread_t watcher;

static size_t slot_of(uint64_t vaddr, uint64_t insns, size_t cap)
{
    uint64_t h = (vaddr ^ (insns << 56)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static void table_put(struct block *b, struct block **t, size_t cap)
{
    size_t i = slot_of(b->vaddr, b->insns, cap);
    while (t[i]) {
        i = (i + 1) & (cap - 1);
    }
    t[i] = b;
}

static int grow(void)
{
    size_t ncap = tablecap ? tablecap * 2 : 1 << 16;
    struct block **nt = calloc(ncap, sizeof(*nt));
    if (!nt) {
        return -1;
    }
    for (size_t i = 0; i < tablecap; i++) {
        if (table[i]) {
            table_put(table[i], nt, ncap);
        }
    }
    free(table);
    table = nt;
    tablecap = ncap;
    return 0;
}

/* lookup_or_add returns the block for (vaddr, insns): a block translated again (after a flush)
 * keeps counting into the same entry. Called with mu held. */
static struct block *lookup_or_add(uint64_t vaddr, uint64_t insns)
{
    if (tablecap == 0 || (nblocks + 1) * 2 > tablecap) {
        if (grow() != 0) {
            return NULL;
        }
    }
    size_t i = slot_of(vaddr, insns, tablecap);
    while (table[i]) {
        if (table[i]->vaddr == vaddr && table[i]->insns == insns) {
            return table[i];
        }
        i = (i + 1) & (tablecap - 1);
    }
    if (nblocks == nchunks * CHUNK) {
        struct block **nc = realloc(chunks, (nchunks + 1) * sizeof(*nc));
        if (!nc) {
            return NULL;
        }
        chunks = nc;
        chunks[nchunks] = calloc(CHUNK, sizeof(struct block));
        if (!chunks[nchunks]) {
            return NULL;
        }
        nchunks++;
    }
    struct block *b = &chunks[nblocks / CHUNK][nblocks % CHUNK];
    nblocks++;
    b->vaddr = vaddr;
    b->insns = insns;
    table[i] = b;
    return b;
}

static int starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* classify adds one instruction's disassembly ("mnemonic operands", AT&T or Intel syntax) to b's
 * static counts; last says it ends the block. */
static void classify(struct block *b, const char *d, int last)
{
    while (starts_with(d, "lock ") || starts_with(d, "rep ") || starts_with(d, "repz ") ||
           starts_with(d, "repnz ") || starts_with(d, "repe ") || starts_with(d, "repne ") ||
           starts_with(d, "bnd ") || starts_with(d, "notrack ") || starts_with(d, "data16 ") ||
           starts_with(d, "cs ") || starts_with(d, "ds ")) {
        if (starts_with(d, "lock ")) {
            b->sys++;
        }
        d = strchr(d, ' ') + 1;
    }
    char m[32];
    size_t n = strcspn(d, " \t");
    if (n >= sizeof(m)) {
        n = sizeof(m) - 1;
    }
    memcpy(m, d, n);
    m[n] = 0;
    const char *ops = d + n;
    while (*ops == ' ' || *ops == '\t') {
        ops++;
    }
    static const char *const stack[] = {"push", "pop", "call", "ret", "leave", "movs", "stos",
                                        "lods", "cmps", "scas", "iret", "enter"};
    static const char *const sys[] = {"syscall", "sysret", "iret", "swapgs", "xsave", "xsaves", "xsavec",
                                      "xsaveopt", "xrstor", "xrstors", "fxsave", "fxrstor", "cpuid", "rdmsr", "wrmsr", "hlt", "in",
                                      "out", "invlpg", "lgdt", "lidt", "ltr", "sti", "cli",
                                      "popf", "rdtsc", "rdpid", "serialize", "mfence", "lfence",
                                      "sfence", "clts"};
    int mem = (strchr(ops, '(') || strchr(ops, '[')) && !starts_with(m, "lea") && !starts_with(m, "nop");
    for (size_t i = 0; !mem && i < sizeof(stack) / sizeof(stack[0]); i++) {
        mem = starts_with(m, stack[i]);
    }
    b->mem += mem;
    if (strstr(ops, "xmm") || strstr(ops, "ymm") || strstr(ops, "zmm")) {
        b->vec++;
    }
    int issys = 0;
    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
        /* the name, or the name with AT&T's operand-size suffix (iretq, inb, popfq) or the 64-bit
         * form's (xsaves64, fxrstor64) */
        size_t k = strlen(sys[i]);
        if (strncmp(m, sys[i], k) == 0 &&
            (m[k] == 0 || (m[k + 1] == 0 && strchr("bwlq", m[k])) || strcmp(m + k, "64") == 0)) {
            issys = 1;
        }
    }
    /* xchg with memory is locked; a mov to or from a control register leaves translated code */
    if ((starts_with(m, "xchg") && mem) || (starts_with(m, "mov") && (strstr(ops, "%cr") || strstr(ops, "cr0") ||
                                                                       strstr(ops, "cr3") || strstr(ops, "cr4")))) {
        issys = 1;
    }
    b->sys += issys;
    if (last) {
        int ret = starts_with(m, "ret");
        int jc = starts_with(m, "jmp") || starts_with(m, "call");
        /* an indirect target: AT&T marks it with '*'; Intel names a register or memory */
        int indirect = jc && (ops[0] == '*' || strchr(ops, '[') ||
                              (ops[0] != 0 && !starts_with(ops, "0x") && !(ops[0] >= '0' && ops[0] <= '9')));
        b->ind = ret || indirect || starts_with(m, "iret") || starts_with(m, "sysret") || starts_with(m, "syscall");
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
    uint64_t insns = qemu_plugin_tb_n_insns(tb);
    pthread_mutex_lock(&mu);
    struct block *b = lookup_or_add(vaddr, insns);
    if (b && !b->classified) {
        b->classified = 1;
        for (size_t i = 0; i < insns; i++) {
            char *d = qemu_plugin_insn_disas(qemu_plugin_tb_get_insn(tb, i));
            if (d) {
                classify(b, d, i + 1 == insns);
                free(d);
            }
        }
    }
    pthread_mutex_unlock(&mu);
    if (b) {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
    }
}

static int dump(unsigned n)
{
    char tmp[4200], final[4200];
    snprintf(tmp, sizeof(tmp), "%s/dump.%u.tmp", dir, n);
    snprintf(final, sizeof(final), "%s/dump.%u", dir, n);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        return -1;
    }
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nblocks; i++) {
        struct block *b = &chunks[i / CHUNK][i % CHUNK];
        uint64_t e = __atomic_load_n(&b->execs, __ATOMIC_RELAXED);
        if (e) {
            fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 " %u %u %u %u\n", b->vaddr, b->insns, e,
                    b->mem, b->vec, b->sys, b->ind);
        }
    }
    pthread_mutex_unlock(&mu);
    if (fclose(f) != 0) {
        return -1;
    }
    return rename(tmp, final);
}

static void *watch(void *arg)
{
    (void)arg;
    unsigned next = 1;
    char mark[4200];
    while (!stopping) {
        snprintf(mark, sizeof(mark), "%s/mark.%u", dir, next);
        if (access(mark, F_OK) == 0) {
            if (dump(next) != 0) {
                fprintf(stderr, "insncount: dump %u: %s\n", next, strerror(errno));
            }
            next++;
            continue;
        }
        usleep(20000);
    }
    return NULL;
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    stopping = 1;
    pthread_join(watcher, NULL);
    char line[128];
    snprintf(line, sizeof(line), "insncount: %zu blocks\n", nblocks);
    qemu_plugin_outs(line);
}

PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                      char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "dir=", 4) == 0) {
            snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
        }
    }
    if (!dir[0]) {
        fprintf(stderr, "insncount: want dir=DIR\n");
        return -1;
    }
    if (pthread_create(&watcher, NULL, watch, NULL) != 0) {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
