// ThreadSanitizer cannot see Synchronization.Mutex's contended paths on Linux: `_lockSlow`,
// `_tryLockSlow` and `_unlockSlow` live in the uninstrumented libswiftSynchronization.so and hand
// the lock over with futex system calls, so every access a contended Mutex protects is reported
// as a data race. Only the uncontended compare-and-swap, inlined into Herald's own (instrumented)
// code, is seen.
//
// In ThreadSanitizer builds of the tests only, these definitions take the three symbols' place
// (an executable's own definition wins over a shared library's), call the library's through
// dlsym(RTLD_NEXT), and tell ThreadSanitizer what they do: a release on the lock word before it
// is unlocked, an acquire once it is locked. Production builds contain none of this.
//
// The functions are Swift methods of `_MutexHandle`: swiftcall, with the handle's address (the
// borrowed ~Copyable value) in the swift_self register (`swift_context` in C).
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

void __tsan_acquire(void *address);
void __tsan_release(void *address);

typedef __attribute__((swiftcall)) void (*LockSlow)(uint32_t selfID, void *__attribute__((swift_context)) handle);
typedef __attribute__((swiftcall)) bool (*TryLockSlow)(void *__attribute__((swift_context)) handle);
typedef __attribute__((swiftcall)) void (*UnlockSlow)(void *__attribute__((swift_context)) handle);

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

static LockSlow original_lock_slow;
static TryLockSlow original_try_lock_slow;
static UnlockSlow original_unlock_slow;

static void *next_definition(const char *name) {
    void *function = dlsym(RTLD_NEXT, name);
    if (function == NULL) abort();  // the toolchain's Mutex changed: these shims must follow it
    return function;
}

// Resolved once at load time, before any thread can lock a Mutex.
__attribute__((constructor)) static void resolve_originals(void) {
    original_lock_slow = (LockSlow)next_definition(LOCK_SLOW);
    original_try_lock_slow = (TryLockSlow)next_definition(TRY_LOCK_SLOW);
    original_unlock_slow = (UnlockSlow)next_definition(UNLOCK_SLOW);
}

__attribute__((swiftcall)) void herald_tsan_lock_slow(uint32_t selfID, void *__attribute__((swift_context)) handle)
    __asm__(LOCK_SLOW);
__attribute__((swiftcall)) void herald_tsan_lock_slow(uint32_t selfID, void *__attribute__((swift_context)) handle) {
    original_lock_slow(selfID, handle);
    __tsan_acquire(handle);
}

__attribute__((swiftcall)) bool herald_tsan_try_lock_slow(void *__attribute__((swift_context)) handle)
    __asm__(TRY_LOCK_SLOW);
__attribute__((swiftcall)) bool herald_tsan_try_lock_slow(void *__attribute__((swift_context)) handle) {
    bool locked = original_try_lock_slow(handle);
    if (locked) __tsan_acquire(handle);
    return locked;
}

__attribute__((swiftcall)) void herald_tsan_unlock_slow(void *__attribute__((swift_context)) handle)
    __asm__(UNLOCK_SLOW);
__attribute__((swiftcall)) void herald_tsan_unlock_slow(void *__attribute__((swift_context)) handle) {
    __tsan_release(handle);
    original_unlock_slow(handle);
}

#endif
#endif
