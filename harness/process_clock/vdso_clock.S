# The vDSO's clock functions, replaced (harness/process_clock/vdso.py writes the bytes; this is
# their source, assembled with `as --64` and linked at 0). They read two instants, nanoseconds
# since the epoch, from the program's clock page: the time of day at [page], the monotonic
# clocks at [page + 8]. `page` is the page's address, written at the end of the code by the
# tracer once it has mapped the clock file into the process. No page yet, or a negative
# instant: that clock keeps real time, asked of the kernel with REAL_TIME in an argument the
# call does not use, which the seccomp filter lets through.
.intel_syntax noprefix
.text
.globl clock_gettime, gettimeofday, time, system_call, page
clock_gettime:                      # edi: the clock; rsi: its struct timespec
    cmp edi, 0                      # CLOCK_REALTIME
    je .Lrealtime
    cmp edi, 5                      # CLOCK_REALTIME_COARSE
    je .Lrealtime
    cmp edi, 11                     # CLOCK_TAI
    je .Lrealtime
    cmp edi, 1                      # CLOCK_MONOTONIC
    je .Lmonotonic
    cmp edi, 4                      # CLOCK_MONOTONIC_RAW
    je .Lmonotonic
    cmp edi, 6                      # CLOCK_MONOTONIC_COARSE
    je .Lmonotonic
    cmp edi, 7                      # CLOCK_BOOTTIME
    je .Lmonotonic
.Lkernel:                           # any other clock (CPU time), or real time
    movabs rdx, 0x5245414c54494d45  # REAL_TIME
    mov eax, 228                    # clock_gettime
    syscall
    ret
.Lrealtime:
    mov rax, [rip + page]
    test rax, rax
    je .Lkernel
    mov rax, [rax]
    jmp .Lsplit
.Lmonotonic:
    mov rax, [rip + page]
    test rax, rax
    je .Lkernel
    mov rax, [rax + 8]
.Lsplit:
    test rax, rax
    js .Lkernel
    xor edx, edx
    mov ecx, 1000000000
    div rcx                         # rax: seconds, rdx: nanoseconds
    mov [rsi], rax
    mov [rsi + 8], rdx
    xor eax, eax
    ret

gettimeofday:                       # rdi: struct timeval, rsi: struct timezone
    mov rax, [rip + page]
    test rax, rax
    je .Lgettimeofday_kernel
    mov rax, [rax]
    test rax, rax
    js .Lgettimeofday_kernel
    test rdi, rdi
    je .Lzone
    xor edx, edx
    mov ecx, 1000000000
    div rcx
    mov [rdi], rax                  # seconds
    mov eax, edx
    xor edx, edx
    mov ecx, 1000
    div ecx
    mov [rdi + 8], rax              # microseconds
.Lzone:
    test rsi, rsi
    je .Ldone
    mov qword ptr [rsi], 0          # UTC, no daylight saving
.Ldone:
    xor eax, eax
    ret
.Lgettimeofday_kernel:
    movabs rdx, 0x5245414c54494d45
    mov eax, 96                     # gettimeofday
    syscall
    ret

time:                               # rdi: time_t, or NULL
    mov rax, [rip + page]
    test rax, rax
    je .Ltime_kernel
    mov rax, [rax]
    test rax, rax
    js .Ltime_kernel
    xor edx, edx
    mov ecx, 1000000000
    div rcx
    test rdi, rdi
    je .Lreturn
    mov [rdi], rax
.Lreturn:
    ret
.Ltime_kernel:
    movabs rsi, 0x5245414c54494d45
    mov eax, 201                    # time
    syscall
    ret

system_call:                        # where the tracer has a stopped program make a call
    syscall
    int3
    .balign 8
page: .quad 0
