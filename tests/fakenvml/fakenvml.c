/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libnvidia-ml.so.1 for tests: every NVML entry point gpulet resolves (NVML_SYMBOLS in
 * src/nvml/symbols.h), answered from a JSON node fixture named by FAKE_NVML_FIXTURE.
 *
 * Run-time injection while a daemon holds the library (tests/fakenvml/README.md):
 *   - the fixture is re-read whenever its inode, size or mtime changes, so a test rewrites it
 *     (atomically) to re-partition MIG, lose a GPU, recover it, or make nvmlInit_v2 fail;
 *   - FAKE_NVML_EVENTS names a file of event lines that nvmlEventSetWait_v2 hands out;
 *   - per-GPU "fail" and "delay_ms" maps make one call fail or hang on one GPU.
 *
 * Handles are pointers into static tables indexed by slot; a slot belongs to one UUID for the life
 * of the process, so a handle stays valid (and answers for the same GPU) across fixture reloads.
 * One mutex guards all state; it is never held while a call sleeps (delays, event waits), so a
 * hung call on one GPU does not block calls on the others.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "nvml/nvml.h"
#include "nvml/abi.h"

#define API      __attribute__((visibility("default")))

#define MAX_GPUS 32 /* mig-minors covers gpu0..gpu31 */
#define MAX_MIGS 16 /* A100/H100 allow 7 MIG devices; room for CI splits */
#define MAX_GIS  16 /* GPU instance ids are 0..14 on A100/H100 */
#define MAX_SETS 64
#define NO_ID    0xFFFFFFFFu
#define MIB      (1024ULL * 1024ULL)

struct nvmlDevice_st {
	unsigned gpu; /* slot */
	int mig;      /* mig slot, -1 for the GPU itself */
};

struct nvmlGpuInstance_st {
	unsigned gpu;
	unsigned gi;
};

/* A compute instance: the MIG slot it backs (nvidia-ctk and GFD reach MIG devices through these). */
struct nvmlComputeInstance_st {
	unsigned gpu;
	unsigned mig;
};

struct nvmlEventSet_st {
	bool used;
	long offset;                       /* bytes of FAKE_NVML_EVENTS already consumed by this set */
	unsigned long long mask[MAX_GPUS]; /* registered event types per GPU slot */
	bool mig_pending[MAX_GPUS];        /* a reload changed that GPU's MIG layout: one MigConfigChange due */
};

struct mig_slot {
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	bool present;
	unsigned index; /* nvmlDeviceGetMigDeviceHandleByIndex position */
	unsigned gi, ci;
	unsigned ci_slices;
	json_t *gi_spec; /* the "mig" entry (GPU instance) */
	json_t *ci_spec; /* the "cis" entry (compute instance) */
	json_t *profile; /* the model's gi_profiles entry */
};

struct gpu_slot {
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	bool present;
	unsigned index;
	json_t *spec;
	json_t *model;
	struct mig_slot migs[MAX_MIGS];
	unsigned long mig_sig; /* hash of MIG mode and instances, to notice a re-partition on reload */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count;
static json_t *root;
static struct stat root_st;
static bool root_loaded;
static char root_path[4096];
static struct gpu_slot slots[MAX_GPUS];
static int by_index[MAX_GPUS];
static unsigned n_gpus;
static struct nvmlDevice_st gpu_handles[MAX_GPUS];
static struct nvmlDevice_st mig_handles[MAX_GPUS][MAX_MIGS];
static struct nvmlGpuInstance_st gi_handles[MAX_GPUS][MAX_GIS];
static struct nvmlComputeInstance_st ci_handles[MAX_GPUS][MAX_MIGS];
static struct nvmlEventSet_st sets[MAX_SETS];
static bool handles_ready;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fakenvml: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ---- fixture access ---------------------------------------------------------------------- */

/* A GPU's field: the GPU object first, then its model, so fixtures share per-model facts. */
static json_t *gpu_get(const struct gpu_slot *g, const char *key)
{
	json_t *v = json_object_get(g->spec, key);

	return v ? v : json_object_get(g->model, key);
}

/* A telemetry field: GPU's "telemetry" object, then the model's. */
static json_t *tel_get(const struct gpu_slot *g, const char *key)
{
	json_t *v = json_object_get(json_object_get(g->spec, "telemetry"), key);

	return v ? v : json_object_get(json_object_get(g->model, "telemetry"), key);
}

static long long int_or(json_t *v, long long def)
{
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_true(v))
		return 1;
	if (json_is_false(v))
		return 0;
	if (json_is_string(v)) /* hex ids such as "0x20B010DE" */
		return strtoll(json_string_value(v), NULL, 0);
	return def;
}

static const char *str_or(json_t *v, const char *def)
{
	return json_is_string(v) ? json_string_value(v) : def;
}

/* A return code in the fixture: a name from nvml_return_name() ("GPU_IS_LOST") or a number. */
static nvmlReturn_t return_code(json_t *v)
{
	nvmlReturn_t r;

	if (json_is_integer(v))
		return (nvmlReturn_t)json_integer_value(v);
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (strncmp(s, "NVML_ERROR_", 11) == 0)
			s += 11;
		if (nvml_return_from_name(s, &r) == 0)
			return r;
		warn("unknown NVML return name '%s' in the fixture; using UNKNOWN", s);
		return NVML_ERROR_UNKNOWN;
	}
	return NVML_SUCCESS;
}

/* ---- reload ------------------------------------------------------------------------------ */

static json_t *find_profile(json_t *model, unsigned profile_index)
{
	size_t i;
	json_t *p;

	json_array_foreach (json_object_get(model, "gi_profiles"), i, p)
		if (int_or(json_object_get(p, "profile"), -1) == (long long)profile_index)
			return p;
	return NULL;
}

static struct mig_slot *mig_slot_for(struct gpu_slot *g, const char *uuid)
{
	for (unsigned i = 0; i < MAX_MIGS; i++)
		if (streq(g->migs[i].uuid, uuid))
			return &g->migs[i];
	for (unsigned i = 0; i < MAX_MIGS; i++)
		if (!g->migs[i].uuid[0]) {
			snprintf(g->migs[i].uuid, sizeof(g->migs[i].uuid), "%s", uuid);
			return &g->migs[i];
		}
	return NULL;
}

static void load_migs(struct gpu_slot *g)
{
	json_t *gi, *ci;
	size_t i, j;
	unsigned index = 0;

	for (unsigned k = 0; k < MAX_MIGS; k++) {
		g->migs[k].present = false;
		g->migs[k].gi_spec = g->migs[k].ci_spec = g->migs[k].profile = NULL;
	}
	g->mig_sig = 2166136261u ^ (unsigned long)int_or(gpu_get(g, "mig_mode"), 0);
	json_array_foreach (json_object_get(g->spec, "mig"), i, gi) {
		json_t *profile = find_profile(g->model, (unsigned)int_or(json_object_get(gi, "gi_profile"), -1));

		if (!profile)
			warn("GPU %s: MIG instance %zu names a gi_profile its model does not list", g->uuid, i);
		json_array_foreach (json_object_get(gi, "cis"), j, ci) {
			const char *uuid = str_or(json_object_get(ci, "uuid"), NULL);
			struct mig_slot *m;

			if (!uuid || !(m = mig_slot_for(g, uuid))) {
				warn("GPU %s: MIG device without uuid or too many MIG devices", g->uuid);
				continue;
			}
			m->present = true;
			m->index = index++;
			m->gi = (unsigned)int_or(json_object_get(gi, "gi"), 0);
			m->ci = (unsigned)int_or(json_object_get(ci, "ci"), 0);
			m->gi_spec = gi;
			m->ci_spec = ci;
			m->profile = profile;
			m->ci_slices = (unsigned)int_or(json_object_get(ci, "ci_slices"),
							int_or(json_object_get(profile, "slices"), 1));
			/* FNV-1a over what identifies the instance. */
			for (const char *p = uuid; *p; p++)
				g->mig_sig = (g->mig_sig ^ (unsigned char)*p) * 16777619u;
			g->mig_sig = (g->mig_sig ^ (m->gi << 8 | m->ci)) * 16777619u;
		}
	}
}

static struct gpu_slot *gpu_slot_for(const char *uuid)
{
	for (unsigned i = 0; i < MAX_GPUS; i++)
		if (streq(slots[i].uuid, uuid))
			return &slots[i];
	for (unsigned i = 0; i < MAX_GPUS; i++)
		if (!slots[i].uuid[0]) {
			snprintf(slots[i].uuid, sizeof(slots[i].uuid), "%s", uuid);
			return &slots[i];
		}
	return NULL;
}

/* fakenvml-fixture.json in this library's directory, when it exists (tests/lib/mkroot.py --with-fakenvml). */
static const char *beside_library(void)
{
	static char path[4096];
	Dl_info info;
	const char *slash;

	if (!dladdr((void *)beside_library, &info) || !info.dli_fname || !(slash = strrchr(info.dli_fname, '/')))
		return NULL;
	snprintf(path, sizeof(path), "%.*s/fakenvml-fixture.json", (int)(slash - info.dli_fname), info.dli_fname);
	return access(path, R_OK) == 0 ? path : NULL;
}

/* Re-read the fixture when it changed on disk. Called with the lock held. */
static int refresh(void)
{
	const char *path = getenv("FAKE_NVML_FIXTURE");
	json_error_t jerr;
	struct stat st;
	json_t *gpu, *next;
	bool old_present[MAX_GPUS];
	unsigned long old_sig[MAX_GPUS];
	size_t i;

	if (!path || !*path)
		path = beside_library(); /* a hook run with an empty environment: mkroot.py puts a copy there */
	if (!path || !*path) {
		warn("FAKE_NVML_FIXTURE is not set; point it at a tests/fixtures/*.json file");
		return -ENOENT;
	}
	if (stat(path, &st) < 0) {
		/* Callers after init keep the state they have; nvmlInit_v2 fails. */
		warn("cannot stat fixture %s: %s", path, strerror(errno));
		return -ENOENT;
	}
	if (root_loaded && streq(path, root_path) && st.st_ino == root_st.st_ino && st.st_size == root_st.st_size &&
	    st.st_mtim.tv_sec == root_st.st_mtim.tv_sec && st.st_mtim.tv_nsec == root_st.st_mtim.tv_nsec)
		return 0;
	next = json_load_file(path, 0, &jerr);
	if (!next) {
		warn("%s:%d:%d: %s (keeping the previous fixture)", path, jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	for (unsigned k = 0; k < MAX_GPUS; k++) {
		old_present[k] = root_loaded && slots[k].present;
		old_sig[k] = slots[k].mig_sig;
		slots[k].present = false;
		slots[k].spec = slots[k].model = NULL;
		by_index[k] = -1;
	}
	n_gpus = 0;
	json_array_foreach (json_object_get(next, "gpus"), i, gpu) {
		const char *uuid = str_or(json_object_get(gpu, "uuid"), NULL);
		struct gpu_slot *g;

		if (!uuid || n_gpus >= MAX_GPUS || !(g = gpu_slot_for(uuid))) {
			warn("%s: gpus[%zu] has no uuid or there are too many GPUs; skipped", path, i);
			continue;
		}
		g->present = true;
		g->index = n_gpus;
		g->spec = gpu;
		g->model = json_object_get(json_object_get(next, "models"), str_or(json_object_get(gpu, "model"), ""));
		by_index[n_gpus++] = (int)(g - slots);
		load_migs(g);
	}
	/* Like the driver, a changed MIG layout is announced to sets registered for it. */
	for (unsigned k = 0; k < MAX_GPUS; k++)
		if (old_present[k] && slots[k].present && old_sig[k] != slots[k].mig_sig)
			for (unsigned j = 0; j < MAX_SETS; j++)
				if (sets[j].used && (sets[j].mask[k] & nvmlEventMigConfigChange))
					sets[j].mig_pending[k] = true;
	json_decref(root);
	root = next;
	root_st = st;
	snprintf(root_path, sizeof(root_path), "%s", path);
	root_loaded = true;
	return 0;
}

/*
 * Forget the parsed fixture (last nvmlShutdown, unload). Slots keep their UUIDs, so handles given
 * out before answer for the same GPU after the next nvmlInit_v2.
 */
static void drop_fixture(void)
{
	for (unsigned k = 0; k < MAX_GPUS; k++) {
		slots[k].present = false;
		slots[k].spec = slots[k].model = NULL;
		for (unsigned j = 0; j < MAX_MIGS; j++) {
			slots[k].migs[j].present = false;
			slots[k].migs[j].gi_spec = slots[k].migs[j].ci_spec = slots[k].migs[j].profile = NULL;
		}
	}
	n_gpus = 0;
	json_decref(root);
	root = NULL;
	root_loaded = false;
}

/* ---- call entry and exit ----------------------------------------------------------------- */

enum want { ANY, GPU_ONLY, MIG_ONLY };

struct call {
	struct gpu_slot *g;
	struct mig_slot *m; /* NULL for a GPU handle */
	struct nvmlDevice_st *h;
};

static nvmlReturn_t leave(nvmlReturn_t r)
{
	pthread_mutex_unlock(&lock);
	return r;
}

/* Fault knobs for function fn in obj: "fail": {fn: RET}, "delay_ms": {fn: N} (also "fail"."delay_ms"). */
static long knob_delay(json_t *obj, const char *fn)
{
	json_t *fail = json_object_get(obj, "fail");
	json_t *d = json_object_get(json_object_get(obj, "delay_ms"), fn);

	if (!d)
		d = json_object_get(json_object_get(fail, "delay_ms"), fn);
	return (long)int_or(d, 0);
}

static nvmlReturn_t knob_fail(json_t *obj, const char *fn)
{
	return return_code(json_object_get(json_object_get(obj, "fail"), fn));
}

static bool handle_valid(nvmlDevice_t h)
{
	uintptr_t p = (uintptr_t)h;

	if (p >= (uintptr_t)gpu_handles && p < (uintptr_t)(gpu_handles + MAX_GPUS))
		return (p - (uintptr_t)gpu_handles) % sizeof(*h) == 0;
	if (p >= (uintptr_t)mig_handles && p < (uintptr_t)(mig_handles + MAX_GPUS))
		return (p - (uintptr_t)mig_handles) % sizeof(*h) == 0;
	return false;
}

static nvmlReturn_t resolve(nvmlDevice_t h, struct call *c)
{
	if (!h || !handle_valid(h))
		return NVML_ERROR_INVALID_ARGUMENT;
	c->h = h;
	c->g = &slots[h->gpu];
	c->m = h->mig >= 0 ? &c->g->migs[h->mig] : NULL;
	if (!c->g->present || (c->m && !c->m->present))
		return NVML_ERROR_INVALID_ARGUMENT; /* GPU gone from the fixture, MIG device destroyed */
	if (json_is_true(gpu_get(c->g, "lost")))
		return NVML_ERROR_GPU_IS_LOST;
	return NVML_SUCCESS;
}

/*
 * Take the lock, reload the fixture, check init, apply the fault knobs of fn. On NVML_SUCCESS the
 * lock is held and the caller ends with `return leave(r)`; on failure the lock is released.
 */
static nvmlReturn_t enter_system(const char *fn)
{
	long delay;
	nvmlReturn_t r;

	pthread_mutex_lock(&lock);
	if (init_count == 0)
		return leave(NVML_ERROR_UNINITIALIZED);
	refresh();
	delay = knob_delay(root, fn);
	if (delay > 0) {
		pthread_mutex_unlock(&lock);
		sleep_ms(delay);
		pthread_mutex_lock(&lock);
		refresh();
	}
	r = knob_fail(root, fn);
	if (r != NVML_SUCCESS)
		return leave(r);
	return NVML_SUCCESS;
}

static nvmlReturn_t enter(const char *fn, nvmlDevice_t h, enum want want, struct call *c)
{
	nvmlReturn_t r = enter_system(fn);
	long delay;

	if (r != NVML_SUCCESS)
		return r;
	r = resolve(h, c);
	if (r != NVML_SUCCESS)
		return leave(r);
	delay = knob_delay(c->g->spec, fn);
	if (delay > 0) {
		pthread_mutex_unlock(&lock);
		sleep_ms(delay);
		pthread_mutex_lock(&lock);
		refresh();
		r = resolve(h, c);
		if (r != NVML_SUCCESS)
			return leave(r);
	}
	r = knob_fail(c->g->spec, fn);
	if (r != NVML_SUCCESS)
		return leave(r);
	if (want == GPU_ONLY && c->m)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	if (want == MIG_ONLY && !c->m)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	return NVML_SUCCESS;
}

#define DEVICE_CALL(dev, want)                                    \
	struct call c;                                            \
	{                                                         \
		nvmlReturn_t r_ = enter(__func__, dev, want, &c); \
		if (r_ != NVML_SUCCESS)                           \
			return r_;                                \
	}

#define SYSTEM_CALL()                                     \
	{                                                 \
		nvmlReturn_t r_ = enter_system(__func__); \
		if (r_ != NVML_SUCCESS)                   \
			return r_;                        \
	}

static nvmlReturn_t copy_str(char *buf, unsigned length, const char *s)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

static nvmlDevice_t gpu_handle(const struct gpu_slot *g)
{
	return &gpu_handles[g - slots];
}

/* ---- init, system ------------------------------------------------------------------------ */

API nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t r;
	int k;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MAX_GPUS && !handles_ready; i++) {
		gpu_handles[i] = (struct nvmlDevice_st){i, -1};
		for (unsigned j = 0; j < MAX_MIGS; j++)
			mig_handles[i][j] = (struct nvmlDevice_st){i, (int)j};
		for (unsigned j = 0; j < MAX_GIS; j++)
			gi_handles[i][j] = (struct nvmlGpuInstance_st){i, j};
	}
	handles_ready = true;
	k = refresh();
	if (k < 0) /* no fixture: as if the kernel module were missing; a broken one: UNKNOWN */
		return leave(k == -ENOENT ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_ERROR_UNKNOWN);
	r = return_code(json_object_get(root, "init_error"));
	if (r != NVML_SUCCESS)
		return leave(r);
	init_count++;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlShutdown(void)
{
	pthread_mutex_lock(&lock);
	if (init_count == 0) /* the real library: SUCCESS before init and after a failed init */
		return leave(NVML_SUCCESS);
	if (--init_count == 0)
		drop_fixture();
	return leave(NVML_SUCCESS);
}

/* A library unloaded while initialized must not leave the fixture tree behind (LeakSanitizer). */
__attribute__((destructor)) static void fakenvml_unload(void)
{
	/* Under the lock: a daemon thread may still call in while the process exits. */
	pthread_mutex_lock(&lock);
	init_count = 0;
	drop_fixture();
	pthread_mutex_unlock(&lock);
}

/*
 * The real library's texts, read from NVIDIA's 535 libnvidia-ml.so.1 (docs/reference/real-driver.md;
 * tests/realdriver/compare-fake.py compares every code). Codes it does not know are "Unknown Error".
 */
static const char *const error_texts[] = {
    [NVML_SUCCESS] = "Success",
    [NVML_ERROR_UNINITIALIZED] = "Uninitialized",
    [NVML_ERROR_INVALID_ARGUMENT] = "Invalid Argument",
    [NVML_ERROR_NOT_SUPPORTED] = "Not Supported",
    [NVML_ERROR_NO_PERMISSION] = "Insufficient Permissions",
    [NVML_ERROR_ALREADY_INITIALIZED] = "Already Initialized",
    [NVML_ERROR_NOT_FOUND] = "Not Found",
    [NVML_ERROR_INSUFFICIENT_SIZE] = "Insufficient Size",
    [NVML_ERROR_INSUFFICIENT_POWER] = "Insufficient External Power",
    [NVML_ERROR_DRIVER_NOT_LOADED] = "Driver Not Loaded",
    [NVML_ERROR_TIMEOUT] = "Timeout",
    [NVML_ERROR_IRQ_ISSUE] = "Interrupt Request Issue",
    [NVML_ERROR_LIBRARY_NOT_FOUND] = "NVML Shared Library Not Found",
    [NVML_ERROR_FUNCTION_NOT_FOUND] = "Function Not Found",
    [NVML_ERROR_CORRUPTED_INFOROM] = "Corrupted infoROM",
    [NVML_ERROR_GPU_IS_LOST] = "GPU is lost",
    [NVML_ERROR_RESET_REQUIRED] = "GPU requires reset",
    [NVML_ERROR_OPERATING_SYSTEM] = "GPU access blocked by the operating system",
    [NVML_ERROR_LIB_RM_VERSION_MISMATCH] = "Driver/library version mismatch",
    [NVML_ERROR_IN_USE] = "In use by another client",
    [NVML_ERROR_MEMORY] = "Insufficient Memory",
    [NVML_ERROR_NO_DATA] = "No data",
    [NVML_ERROR_VGPU_ECC_NOT_SUPPORTED] = "vGPU ECC not supported",
    [NVML_ERROR_INSUFFICIENT_RESOURCES] = "Insufficient Resources",
    [NVML_ERROR_FREQ_NOT_SUPPORTED] = "Invalid Frequency",
    [NVML_ERROR_ARGUMENT_VERSION_MISMATCH] = "Argument version mismatch",
    [NVML_ERROR_DEPRECATED] = "Requested functionality has been deprecated",
    [NVML_ERROR_NOT_READY] = "System is not in ready state",
};

API const char *nvmlErrorString(nvmlReturn_t result)
{
	if (result >= 0 && (size_t)result < ELEMENTSOF(error_texts) && error_texts[result])
		return error_texts[result];
	return "Unknown Error";
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
	SYSTEM_CALL();
	return leave(copy_str(version, length, str_or(json_object_get(root, "driver_version"), "550.54.15")));
}

/* Answers before nvmlInit_v2 and without a driver, as the real library does (its own version). */
API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned length)
{
	pthread_mutex_lock(&lock);
	if (init_count == 0 && !root_loaded)
		(void)refresh();
	return leave(copy_str(version, length, str_or(json_object_get(root, "nvml_version"), "12.550.54.15")));
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	SYSTEM_CALL();
	if (!v)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*v = (int)int_or(json_object_get(root, "cuda_driver_version"), 12040);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	SYSTEM_CALL();
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*count = n_gpus;
	return leave(NVML_SUCCESS);
}

/* Handle lookups fail with GPU_IS_LOST for a lost GPU, as the driver does for a GPU off the bus. */
static nvmlReturn_t hand_out(struct gpu_slot *g, struct mig_slot *m, nvmlDevice_t *device)
{
	if (json_is_true(gpu_get(g, "lost")))
		return NVML_ERROR_GPU_IS_LOST;
	*device = m ? &mig_handles[g - slots][m - g->migs] : gpu_handle(g);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device)
{
	SYSTEM_CALL();
	if (!device || index >= n_gpus)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(hand_out(&slots[by_index[index]], NULL, device));
}

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	SYSTEM_CALL();
	if (!uuid || !device)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	for (unsigned i = 0; i < n_gpus; i++) {
		struct gpu_slot *g = &slots[by_index[i]];

		if (streq(g->uuid, uuid))
			return leave(hand_out(g, NULL, device));
		for (unsigned j = 0; j < MAX_MIGS; j++)
			if (g->migs[j].present && streq(g->migs[j].uuid, uuid))
				return leave(hand_out(g, &g->migs[j], device));
	}
	return leave(NVML_ERROR_NOT_FOUND);
}

/* ---- identity ---------------------------------------------------------------------------- */

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned length)
{
	DEVICE_CALL(device, ANY);
	return leave(copy_str(uuid, length, c.m ? c.m->uuid : c.g->uuid));
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned length)
{
	const char *gpu_name;
	char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];

	DEVICE_CALL(device, ANY);
	gpu_name = str_or(gpu_get(c.g, "name"), "NVIDIA Fake GPU");
	if (!c.m)
		return leave(copy_str(name, length, gpu_name));
	/* MIG devices are named "<GPU name> MIG [<c>c.]<profile>", e.g. "... MIG 1g.5gb". */
	if (c.m->ci_slices != (unsigned)int_or(json_object_get(c.m->profile, "slices"), 0))
		snprintf(buf, sizeof(buf), "%s MIG %uc.%s", gpu_name, c.m->ci_slices,
			 str_or(json_object_get(c.m->profile, "name"), "?"));
	else
		snprintf(buf, sizeof(buf), "%s MIG %s", gpu_name, str_or(json_object_get(c.m->profile, "name"), "?"));
	return leave(copy_str(name, length, buf));
}

static nvmlReturn_t put_uint(unsigned *out, json_t *v)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (unsigned)int_or(v, 0);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned *minor)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!minor)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*minor = (unsigned)int_or(gpu_get(c.g, "minor"), c.g->index);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned *index)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!index)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*index = c.g->index;
	return leave(NVML_SUCCESS);
}

/* nvmlPciInfo_t from an NVML bus id "00000000:07:00.0". */
static nvmlReturn_t fill_pci(nvmlPciInfo_t *pci, const char *bus_id, unsigned device_id, unsigned subsys_id)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;

	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return NVML_ERROR_UNKNOWN;
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", dom & 0xffff, bus, dev, fn);
	snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", dom, bus, dev, fn);
	pci->domain = dom;
	pci->bus = bus;
	pci->device = dev;
	pci->pciDeviceId = device_id;
	pci->pciSubSystemId = subsys_id;
	return NVML_SUCCESS;
}

static nvmlReturn_t gpu_pci(const struct gpu_slot *g, nvmlPciInfo_t *pci)
{
	return fill_pci(pci, str_or(gpu_get(g, "pci_bus_id"), "00000000:00:00.0"),
			(unsigned)int_or(gpu_get(g, "pci_device_id"), 0),
			(unsigned)int_or(gpu_get(g, "pci_subsystem_id"), 0));
}

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	DEVICE_CALL(device, ANY);
	return leave(gpu_pci(c.g, pci));
}

static unsigned long long processes_used_mib(const struct gpu_slot *g, const struct mig_slot *m)
{
	unsigned long long sum = 0;
	json_t *p;
	size_t i;

	json_array_foreach (tel_get(g, "processes"), i, p) {
		if (m && ((unsigned)int_or(json_object_get(p, "gi"), NO_ID) != m->gi ||
			  (unsigned)int_or(json_object_get(p, "ci"), NO_ID) != m->ci))
			continue;
		sum += (unsigned long long)int_or(json_object_get(p, "used_mib"), 0);
	}
	return sum;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	unsigned long long total, used;

	DEVICE_CALL(device, ANY);
	if (!memory)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (c.m) {
		total = (unsigned long long)int_or(json_object_get(c.m->profile, "memory_mb"), 0) * MIB;
		used = (unsigned long long)int_or(json_object_get(c.m->ci_spec, "memory_used_mib"),
						  (long long)processes_used_mib(c.g, c.m)) *
		       MIB;
	} else {
		total = (unsigned long long)int_or(gpu_get(c.g, "memory_mib"), 0) * MIB;
		used = (unsigned long long)int_or(tel_get(c.g, "memory_used_mib"),
						  (long long)processes_used_mib(c.g, NULL)) *
		       MIB;
	}
	memory->total = total;
	memory->used = used < total ? used : total;
	memory->free = total - memory->used;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
	json_t *cc;

	DEVICE_CALL(device, ANY);
	if (!major || !minor)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	cc = gpu_get(c.g, "cuda_cc");
	if (!json_is_array(cc))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	*major = (int)int_or(json_array_get(cc, 0), 0);
	*minor = (int)int_or(json_array_get(cc, 1), 0);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned *arch)
{
	DEVICE_CALL(device, ANY);
	return leave(put_uint(arch, gpu_get(c.g, "arch")));
}

API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, int *type)
{
	DEVICE_CALL(device, ANY);
	return leave(put_uint((unsigned *)type, gpu_get(c.g, "brand")));
}

API nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned *node)
{
	DEVICE_CALL(device, ANY);
	return leave(put_uint(node, gpu_get(c.g, "numa_node")));
}

/* ---- MIG --------------------------------------------------------------------------------- */

static bool mig_capable(const struct gpu_slot *g)
{
	return json_is_true(gpu_get(g, "mig_capable"));
}

static bool mig_enabled(const struct gpu_slot *g)
{
	return mig_capable(g) && int_or(gpu_get(g, "mig_mode"), 0) == NVML_DEVICE_MIG_ENABLE;
}

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned *current, unsigned *pending)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!current || !pending)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!mig_capable(c.g))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	*current = (unsigned)int_or(gpu_get(c.g, "mig_mode"), 0);
	*pending = (unsigned)int_or(gpu_get(c.g, "mig_pending"), *current);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned *count)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!mig_capable(c.g))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	return leave(put_uint(count, gpu_get(c.g, "max_mig_devices")));
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned index, nvmlDevice_t *mig)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!mig)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!mig_capable(c.g))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	if (index >= (unsigned)int_or(gpu_get(c.g, "max_mig_devices"), 0))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (mig_enabled(c.g))
		for (unsigned j = 0; j < MAX_MIGS; j++)
			if (c.g->migs[j].present && c.g->migs[j].index == index)
				return leave(hand_out(c.g, &c.g->migs[j], mig));
	return leave(NVML_ERROR_NOT_FOUND);
}

API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned *is_mig)
{
	DEVICE_CALL(device, ANY);
	if (!is_mig)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*is_mig = c.m != NULL;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned *id)
{
	DEVICE_CALL(device, MIG_ONLY);
	if (!id)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*id = c.m->gi;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned *id)
{
	DEVICE_CALL(device, MIG_ONLY);
	if (!id)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*id = c.m->ci;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *device)
{
	DEVICE_CALL(mig, ANY);
	if (!device || !c.m)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*device = gpu_handle(c.g);
	return leave(NVML_SUCCESS);
}

static unsigned prof_u(json_t *profile, const char *key)
{
	return (unsigned)int_or(json_object_get(profile, key), 0);
}

API nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *a)
{
	unsigned gi_slices;

	DEVICE_CALL(device, MIG_ONLY);
	if (!a)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	gi_slices = prof_u(c.m->profile, "slices");
	memset(a, 0, sizeof(*a));
	a->multiprocessorCount = gi_slices ? prof_u(c.m->profile, "sms") * c.m->ci_slices / gi_slices : 0;
	a->sharedCopyEngineCount = prof_u(c.m->profile, "ce");
	a->sharedDecoderCount = prof_u(c.m->profile, "dec");
	a->sharedEncoderCount = prof_u(c.m->profile, "enc");
	a->sharedJpegCount = prof_u(c.m->profile, "jpeg");
	a->sharedOfaCount = prof_u(c.m->profile, "ofa");
	a->gpuInstanceSliceCount = gi_slices;
	a->computeInstanceSliceCount = c.m->ci_slices;
	a->memorySizeMB = (unsigned long long)int_or(json_object_get(c.m->profile, "memory_mb"), 0);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned profile,
						     nvmlGpuInstanceProfileInfo_t *info)
{
	json_t *p;

	DEVICE_CALL(device, GPU_ONLY);
	if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!mig_capable(c.g) || !(p = find_profile(c.g->model, profile)))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	memset(info, 0, sizeof(*info));
	info->id = prof_u(p, "id");
	info->isP2pSupported = prof_u(p, "p2p");
	info->sliceCount = prof_u(p, "slices");
	info->instanceCount = prof_u(p, "instances");
	info->multiprocessorCount = prof_u(p, "sms");
	info->copyEngineCount = prof_u(p, "ce");
	info->decoderCount = prof_u(p, "dec");
	info->encoderCount = prof_u(p, "enc");
	info->jpegCount = prof_u(p, "jpeg");
	info->ofaCount = prof_u(p, "ofa");
	info->memorySizeMB = (unsigned long long)int_or(json_object_get(p, "memory_mb"), 0);
	return leave(NVML_SUCCESS);
}

static const struct mig_slot *gi_first_mig(const struct gpu_slot *g, unsigned gi)
{
	for (unsigned j = 0; j < MAX_MIGS; j++)
		if (g->migs[j].present && g->migs[j].gi == gi)
			return &g->migs[j];
	return NULL;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned id, nvmlGpuInstance_t *gi)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!gi || id >= MAX_GIS)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!mig_capable(c.g))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	if (!mig_enabled(c.g))
		return leave(NVML_ERROR_INVALID_STATE);
	if (!gi_first_mig(c.g, id))
		return leave(NVML_ERROR_NOT_FOUND);
	*gi = &gi_handles[c.g - slots][id];
	return leave(NVML_SUCCESS);
}

static bool in_table(const void *h, const void *table, size_t rows, size_t size)
{
	uintptr_t p = (uintptr_t)h, t = (uintptr_t)table;

	return h && p >= t && p < t + rows * size && (p - t) % size == 0;
}

/* enter() for a GPU instance handle: the GPU's call, then the instance's first MIG slot. */
static nvmlReturn_t enter_gi(const char *fn, nvmlGpuInstance_t gi, struct call *c, const struct mig_slot **m)
{
	nvmlReturn_t r;

	if (!in_table(gi, gi_handles, MAX_GPUS * MAX_GIS, sizeof(*gi)))
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter(fn, &gpu_handles[gi->gpu], GPU_ONLY, c);
	if (r != NVML_SUCCESS)
		return r;
	*m = gi_first_mig(c->g, gi->gi);
	if (!*m || !mig_enabled(c->g))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info)
{
	const struct mig_slot *m;
	struct call c;
	nvmlReturn_t r = info ? enter_gi(__func__, gi, &c, &m) : NVML_ERROR_INVALID_ARGUMENT;

	if (r != NVML_SUCCESS)
		return r;
	memset(info, 0, sizeof(*info));
	info->device = gpu_handle(c.g);
	info->id = m->gi;
	info->profileId = prof_u(m->profile, "id");
	info->placement.start = (unsigned)int_or(json_array_get(json_object_get(m->gi_spec, "placement"), 0), 0);
	info->placement.size =
	    (unsigned)int_or(json_array_get(json_object_get(m->gi_spec, "placement"), 1), prof_u(m->profile, "slices"));
	return leave(NVML_SUCCESS);
}

/*
 * apply-cuda-memory-limits (both hooks): each call is appended as one line "UUID CGROUP SOFT HARD" to the
 * file the fixture's "memory_limits_log" names, so a test sees what reached NVML; "fail" knobs apply.
 */
struct fake_memory_limits {
	const char *name_space;
	unsigned long long soft, hard;
};

API nvmlReturn_t nvmlDeviceSetMemoryLimits_v1(nvmlDevice_t device, const struct fake_memory_limits *lim)
{
	const char *log;
	char line[4600];
	int fd, n;

	DEVICE_CALL(device, GPU_ONLY);
	if (!lim || !lim->name_space || lim->soft > lim->hard)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	log = str_or(json_object_get(root, "memory_limits_log"), NULL);
	if (log) {
		n = snprintf(line, sizeof(line), "%s %s %llu %llu\n", c.g->uuid, lim->name_space, lim->soft, lim->hard);
		fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || n < 0 || write(fd, line, (size_t)n) != n)
			warn("memory_limits_log %s: %s", log, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return leave(NVML_SUCCESS);
}

/*
 * Compute instances: entry points gpulet does not call, NVIDIA's nvidia-ctk and GFD do
 * (PEER_SYMBOLS in peer_symbols.h; the oracle tests in tests/oracles run those tools on the fake).
 */
API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gi, unsigned id, nvmlComputeInstance_t *ci)
{
	const struct mig_slot *m;
	struct call c;
	nvmlReturn_t r = ci ? enter_gi(__func__, gi, &c, &m) : NVML_ERROR_INVALID_ARGUMENT;

	if (r != NVML_SUCCESS)
		return r;
	for (unsigned j = 0; j < MAX_MIGS; j++)
		if (c.g->migs[j].present && c.g->migs[j].gi == gi->gi && c.g->migs[j].ci == id) {
			ci_handles[gi->gpu][j] = (struct nvmlComputeInstance_st){gi->gpu, j};
			*ci = &ci_handles[gi->gpu][j];
			return leave(NVML_SUCCESS);
		}
	return leave(NVML_ERROR_NOT_FOUND);
}

/* NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE ids 0..6 and their slice counts (nvml.h). */
static const unsigned ci_profile_slices[] = {1, 2, 3, 4, 7, 8, 6};
#define CI_PROFILES (sizeof(ci_profile_slices) / sizeof(ci_profile_slices[0]))

static unsigned ci_profile_id(unsigned slices)
{
	for (unsigned i = 0; i < CI_PROFILES; i++)
		if (ci_profile_slices[i] == slices)
			return i;
	return 0;
}

/* nvml.h's nvmlComputeInstanceProfileInfo_t (v1), not in gpulet's ABI header: gpulet never asks. */
typedef struct {
	unsigned id, sliceCount, instanceCount, multiprocessorCount;
	unsigned sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} fake_ci_profile_info_t;

/* Every CI profile that fits the GPU instance, shared engines only (engine profile 0). */
API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned profile,
							      unsigned eng_profile, fake_ci_profile_info_t *info)
{
	const struct mig_slot *m;
	struct call c;
	unsigned gi_slices;
	nvmlReturn_t r = info ? enter_gi(__func__, gi, &c, &m) : NVML_ERROR_INVALID_ARGUMENT;

	if (r != NVML_SUCCESS)
		return r;
	gi_slices = prof_u(m->profile, "slices");
	if (profile >= CI_PROFILES || eng_profile != 0)
		return leave(profile >= CI_PROFILES ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED);
	if (!gi_slices || ci_profile_slices[profile] > gi_slices)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	memset(info, 0, sizeof(*info));
	info->id = profile;
	info->sliceCount = ci_profile_slices[profile];
	info->instanceCount = gi_slices / ci_profile_slices[profile];
	info->multiprocessorCount = prof_u(m->profile, "sms") * ci_profile_slices[profile] / gi_slices;
	info->sharedCopyEngineCount = prof_u(m->profile, "ce");
	info->sharedDecoderCount = prof_u(m->profile, "dec");
	info->sharedEncoderCount = prof_u(m->profile, "enc");
	info->sharedJpegCount = prof_u(m->profile, "jpeg");
	info->sharedOfaCount = prof_u(m->profile, "ofa");
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info)
{
	const struct mig_slot *m;
	nvmlReturn_t r;
	struct call c;

	if (!info || !in_table(ci, ci_handles, MAX_GPUS * MAX_MIGS, sizeof(*ci)))
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter(__func__, &gpu_handles[ci->gpu], GPU_ONLY, &c);
	if (r != NVML_SUCCESS)
		return r;
	m = &c.g->migs[ci->mig];
	if (!m->present || !mig_enabled(c.g))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	memset(info, 0, sizeof(*info));
	info->device = gpu_handle(c.g);
	info->gpuInstance = &gi_handles[ci->gpu][m->gi];
	info->id = m->ci;
	info->profileId = ci_profile_id(m->ci_slices);
	info->placement.start = m->ci * m->ci_slices;
	info->placement.size = m->ci_slices;
	return leave(NVML_SUCCESS);
}

/* ---- telemetry --------------------------------------------------------------------------- */

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u)
{
	json_t *v;

	DEVICE_CALL(device, GPU_ONLY);
	if (!u)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	v = tel_get(c.g, "utilization");
	if (!v)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	u->gpu = (unsigned)int_or(json_object_get(v, "gpu"), 0);
	u->memory = (unsigned)int_or(json_object_get(v, "memory"), 0);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned *temp)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (sensor != NVML_TEMPERATURE_GPU)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(put_uint(temp, tel_get(c.g, "temperature_c")));
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned *power)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(put_uint(power, tel_get(c.g, "power_mw")));
}

API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned *clock)
{
	static const char *const names[] = {[NVML_CLOCK_GRAPHICS] = "graphics",
					    [NVML_CLOCK_SM] = "sm",
					    [NVML_CLOCK_MEM] = "mem",
					    [NVML_CLOCK_VIDEO] = "video"};

	DEVICE_CALL(device, GPU_ONLY);
	if (type < 0 || (size_t)type >= ELEMENTSOF(names))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(put_uint(clock, json_object_get(tel_get(c.g, "clocks_mhz"), names[type])));
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type, int counter_type,
					     unsigned long long *count)
{
	static const char *const keys[2][2] = {
	    [NVML_MEMORY_ERROR_TYPE_CORRECTED] =
		{[NVML_VOLATILE_ECC] = "sbe_volatile", [NVML_AGGREGATE_ECC] = "sbe_aggregate"},
	    [NVML_MEMORY_ERROR_TYPE_UNCORRECTED] =
		{[NVML_VOLATILE_ECC] = "dbe_volatile", [NVML_AGGREGATE_ECC] = "dbe_aggregate"},
	};
	json_t *ecc;

	DEVICE_CALL(device, GPU_ONLY);
	if (!count || error_type < 0 || error_type > 1 || counter_type < 0 || counter_type > 1)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	ecc = tel_get(c.g, "ecc");
	if (!ecc)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	*count = (unsigned long long)int_or(json_object_get(ecc, keys[error_type][counter_type]), 0);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned *count,
					   unsigned long long *addresses)
{
	json_t *pages;
	unsigned n;

	DEVICE_CALL(device, GPU_ONLY);
	if (!count || cause < 0 || cause > 1)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!tel_get(c.g, "retired_pages"))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	pages = json_object_get(tel_get(c.g, "retired_pages"),
				cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "dbe" : "sbe");
	n = (unsigned)json_array_size(pages);
	if (*count < n || (n && !addresses)) {
		*count = n;
		return leave(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	for (unsigned i = 0; i < n; i++)
		addresses[i] = (unsigned long long)int_or(json_array_get(pages, i), 0);
	*count = n;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned *corr, unsigned *unc, unsigned *pending,
					   unsigned *failure)
{
	json_t *rr;

	DEVICE_CALL(device, GPU_ONLY);
	if (!corr || !unc || !pending || !failure)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	rr = tel_get(c.g, "remapped_rows");
	if (!rr)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	*corr = (unsigned)int_or(json_object_get(rr, "correctable"), 0);
	*unc = (unsigned)int_or(json_object_get(rr, "uncorrectable"), 0);
	*pending = (unsigned)int_or(json_object_get(rr, "pending"), 0);
	*failure = (unsigned)int_or(json_object_get(rr, "failure"), 0);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned *count, nvmlProcessInfo_t *infos)
{
	json_t *p;
	size_t i;
	unsigned n = 0;

	DEVICE_CALL(device, ANY);
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	/* First pass counts, second fills: the caller's buffer must hold them all. */
	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		json_array_foreach (tel_get(c.g, "processes"), i, p) {
			unsigned gi = (unsigned)int_or(json_object_get(p, "gi"), NO_ID);
			unsigned ci = (unsigned)int_or(json_object_get(p, "ci"), NO_ID);

			if (c.m && (gi != c.m->gi || ci != c.m->ci))
				continue;
			if (pass == 1) {
				infos[n].pid = (unsigned)int_or(json_object_get(p, "pid"), 0);
				infos[n].usedGpuMemory =
				    (unsigned long long)int_or(json_object_get(p, "used_mib"), 0) * MIB;
				infos[n].gpuInstanceId = gi;
				infos[n].computeInstanceId = ci;
			}
			n++;
		}
		if (pass == 0 && (*count < n || (n && !infos))) {
			*count = n;
			return leave(NVML_ERROR_INSUFFICIENT_SIZE);
		}
	}
	*count = n;
	return leave(NVML_SUCCESS);
}

/*
 * One sample per process of the GPU with some utilization in the fixture (its sm_util, mem_util,
 * enc_util, dec_util: NVML returns "one sample per process that had non-zero utilization"), dated now.
 * With a NULL buffer: INSUFFICIENT_SIZE and the count, as go-nvml asks first; none: NOT_FOUND; on a
 * MIG-enabled GPU NOT_SUPPORTED (nvml.h: "not currently supported").
 */
API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *util,
						 unsigned *count, unsigned long long last_seen)
{
	static const char *const keys[] = {"sm_util", "mem_util", "enc_util", "dec_util"};
	struct timespec ts;
	unsigned long long now;
	json_t *p;
	size_t i;
	unsigned n = 0;

	DEVICE_CALL(device, GPU_ONLY);
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (mig_enabled(c.g))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		json_array_foreach (tel_get(c.g, "processes"), i, p) {
			long long v[4];
			bool any = false;

			for (int k = 0; k < 4; k++)
				any |= (v[k] = int_or(json_object_get(p, keys[k]), 0)) > 0;
			if (!any || now <= last_seen)
				continue;
			if (pass == 1)
				util[n] = (nvmlProcessUtilizationSample_t){
				    .pid = (unsigned)int_or(json_object_get(p, "pid"), 0),
				    .timeStamp = now,
				    .smUtil = (unsigned)v[0],
				    .memUtil = (unsigned)v[1],
				    .encUtil = (unsigned)v[2],
				    .decUtil = (unsigned)v[3]};
			n++;
		}
		if (pass == 0 && !n)
			return leave(NVML_ERROR_NOT_FOUND);
		if (pass == 0 && (!util || *count < n)) {
			*count = n;
			return leave(NVML_ERROR_INSUFFICIENT_SIZE);
		}
	}
	*count = n;
	return leave(NVML_SUCCESS);
}

/* ---- topology ---------------------------------------------------------------------------- */

API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d1, nvmlDevice_t d2, int *level)
{
	struct call c2;
	nvmlReturn_t r;
	json_t *v;

	DEVICE_CALL(d1, GPU_ONLY);
	r = resolve(d2, &c2);
	if (r != NVML_SUCCESS)
		return leave(r);
	if (!level || c2.m)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (c.g == c2.g) {
		*level = NVML_TOPOLOGY_INTERNAL;
		return leave(NVML_SUCCESS);
	}
	/* An explicit level matrix wins; else same NUMA node -> NODE, different -> SYSTEM. */
	v = json_array_get(json_array_get(json_object_get(json_object_get(root, "topology"), "pcie"), c.g->index),
			   c2.g->index);
	if (v)
		*level = (int)int_or(v, NVML_TOPOLOGY_SYSTEM);
	else
		*level = int_or(gpu_get(c.g, "numa_node"), -1) == int_or(gpu_get(c2.g, "numa_node"), -2)
			     ? NVML_TOPOLOGY_NODE
			     : NVML_TOPOLOGY_SYSTEM;
	return leave(NVML_SUCCESS);
}

/* Link entry: a remote bus id string, null (link down), or {"bus_id": ..., "active": bool}. */
static nvmlReturn_t nvlink_entry(const struct gpu_slot *g, unsigned link, json_t **entry)
{
	json_t *links = gpu_get(g, "nvlinks");

	if (!json_is_array(links))
		return NVML_ERROR_NOT_SUPPORTED;
	if (link >= json_array_size(links) || link >= NVML_NVLINK_MAX_LINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	*entry = json_array_get(links, link);
	return NVML_SUCCESS;
}

static bool nvlink_active(json_t *e)
{
	return json_is_string(e) || (json_is_object(e) && !json_is_false(json_object_get(e, "active")));
}

API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned link, int *active)
{
	json_t *e;
	nvmlReturn_t r;

	DEVICE_CALL(device, GPU_ONLY);
	if (!active)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	r = nvlink_entry(c.g, link, &e);
	if (r == NVML_SUCCESS)
		*active = nvlink_active(e) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return leave(r);
}

API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned link, nvmlPciInfo_t *pci)
{
	json_t *e, *sw;
	const char *bus;
	size_t i;
	nvmlReturn_t r;

	DEVICE_CALL(device, GPU_ONLY);
	r = nvlink_entry(c.g, link, &e);
	if (r != NVML_SUCCESS)
		return leave(r);
	if (!nvlink_active(e))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	bus = json_is_string(e) ? json_string_value(e) : str_or(json_object_get(e, "bus_id"), "");
	for (unsigned k = 0; k < n_gpus; k++)
		if (strcasecmp(str_or(gpu_get(&slots[by_index[k]], "pci_bus_id"), ""), bus) == 0)
			return leave(gpu_pci(&slots[by_index[k]], pci));
	json_array_foreach (json_object_get(root, "nvswitches"), i, sw)
		if (strcasecmp(str_or(json_object_get(sw, "bus_id"), ""), bus) == 0)
			return leave(fill_pci(pci, bus, (unsigned)int_or(json_object_get(sw, "pci_device_id"), 0),
					      (unsigned)int_or(json_object_get(sw, "pci_subsystem_id"), 0)));
	return leave(fill_pci(pci, bus, 0, 0));
}

/*
 * P2P over NVLink: OK when an active link of d1 reaches d2's bus id or an NVSwitch (every GPU of the
 * fabric), else NOT_SUPPORTED; a GPU's "p2p_nvlink_status" {"<peer index>": status} overrides.
 * Other capability indexes: NOT_SUPPORTED as the status.
 */
API nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, nvmlGpuP2PCapsIndex_t index,
					nvmlGpuP2PStatus_t *status)
{
	struct call c2;
	char peer[16];
	nvmlReturn_t r;
	json_t *e, *sw, *v;
	size_t i, k;

	DEVICE_CALL(d1, GPU_ONLY);
	r = resolve(d2, &c2);
	if (r != NVML_SUCCESS)
		return leave(r);
	if (!status || c2.m)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*status = NVML_P2P_STATUS_NOT_SUPPORTED;
	snprintf(peer, sizeof(peer), "%u", c2.g->index);
	v = json_object_get(gpu_get(c.g, "p2p_nvlink_status"), peer);
	if (index == NVML_P2P_CAPS_INDEX_NVLINK && v) {
		*status = (int)int_or(v, NVML_P2P_STATUS_UNKNOWN);
		return leave(NVML_SUCCESS);
	}
	json_array_foreach (index == NVML_P2P_CAPS_INDEX_NVLINK && c.g != c2.g ? gpu_get(c.g, "nvlinks") : NULL, i, e) {
		const char *bus = json_is_string(e) ? json_string_value(e) : str_or(json_object_get(e, "bus_id"), "");
		if (!nvlink_active(e))
			continue;
		if (strcasecmp(str_or(gpu_get(c2.g, "pci_bus_id"), ""), bus) == 0)
			*status = NVML_P2P_STATUS_OK;
		json_array_foreach (json_object_get(root, "nvswitches"), k, sw)
			if (strcasecmp(str_or(json_object_get(sw, "bus_id"), ""), bus) == 0)
				*status = NVML_P2P_STATUS_OK;
	}
	return leave(NVML_SUCCESS);
}

/* ---- events ------------------------------------------------------------------------------ */

static bool set_valid(nvmlEventSet_t set)
{
	uintptr_t p = (uintptr_t)set;

	return set && p >= (uintptr_t)sets && p < (uintptr_t)(sets + MAX_SETS) &&
	       (p - (uintptr_t)sets) % sizeof(*set) == 0 && set->used;
}

static long events_size(void)
{
	const char *path = getenv("FAKE_NVML_EVENTS");
	struct stat st;

	return path && stat(path, &st) == 0 ? (long)st.st_size : 0;
}

API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	SYSTEM_CALL();
	if (!set)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	for (unsigned i = 0; i < MAX_SETS; i++)
		if (!sets[i].used) {
			memset(&sets[i], 0, sizeof(sets[i]));
			sets[i].used = true;
			/* Like the driver, a set only sees events that happen after it exists. */
			sets[i].offset = events_size();
			*set = &sets[i];
			return leave(NVML_SUCCESS);
		}
	return leave(NVML_ERROR_MEMORY);
}

API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	pthread_mutex_lock(&lock);
	if (!set_valid(set))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	set->used = false;
	return leave(NVML_SUCCESS);
}

static unsigned long long supported_events(const struct gpu_slot *g)
{
	return (unsigned long long)int_or(gpu_get(g, "supported_events"),
					  (long long)(nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError |
						      nvmlEventTypeXidCriticalError));
}

API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *types)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!types)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*types = supported_events(c.g);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!set_valid(set))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	/* NVML: NOT_SUPPORTED when any requested type is unsupported; nothing is registered then. */
	if (types & ~supported_events(c.g))
		return leave(NVML_ERROR_NOT_SUPPORTED);
	set->mask[c.g - slots] |= types;
	return leave(NVML_SUCCESS);
}

/* Device named in an event line: index, GPU UUID or MIG UUID (then gi/ci come from it). */
static struct gpu_slot *event_device(const char *tok, unsigned *gi, unsigned *ci)
{
	char *end;
	unsigned long idx = strtoul(tok, &end, 10);

	if (*tok && !*end)
		return idx < n_gpus ? &slots[by_index[idx]] : NULL;
	for (unsigned i = 0; i < n_gpus; i++) {
		struct gpu_slot *g = &slots[by_index[i]];

		if (streq(g->uuid, tok))
			return g;
		for (unsigned j = 0; j < MAX_MIGS; j++)
			if (g->migs[j].present && streq(g->migs[j].uuid, tok)) {
				*gi = g->migs[j].gi;
				*ci = g->migs[j].ci;
				return g;
			}
	}
	return NULL;
}

/*
 * One event line for this set, or -1 when the line is for another device/type (skip it).
 * Returns the NVML code to hand back: SUCCESS with *data filled, or an injected error.
 */
static int event_parse(nvmlEventSet_t set, char *line, nvmlEventData_t *data)
{
	static const struct {
		const char *word;
		unsigned long long type;
	} kinds[] = {
	    {"xid", nvmlEventTypeXidCriticalError},
	    {"sbe", nvmlEventTypeSingleBitEccError},
	    {"dbe", nvmlEventTypeDoubleBitEccError},
	    {"migchange", nvmlEventMigConfigChange},
	};
	char *save = NULL, *word = strtok_r(line, " \t\r", &save), *dev, *tok;
	unsigned gi = NO_ID, ci = NO_ID;
	struct gpu_slot *g;
	nvmlReturn_t r;

	if (!word || word[0] == '#')
		return -1;
	if (streq(word, "wait_error")) {
		json_t *name = json_string((tok = strtok_r(NULL, " \t\r", &save)) ? tok : "UNKNOWN");

		r = return_code(name);
		json_decref(name);
		return r;
	}
	for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
		if (!streq(word, kinds[k].word))
			continue;
		dev = strtok_r(NULL, " \t\r", &save);
		if (!dev || !(g = event_device(dev, &gi, &ci))) {
			warn("event line '%s %s': unknown device", word, dev ? dev : "");
			return -1;
		}
		if (!(set->mask[g - slots] & kinds[k].type))
			return -1;
		memset(data, 0, sizeof(*data));
		data->device = gpu_handle(g);
		data->eventType = kinds[k].type;
		if (kinds[k].type == nvmlEventTypeXidCriticalError) {
			tok = strtok_r(NULL, " \t\r", &save);
			data->eventData = tok ? strtoull(tok, NULL, 10) : 999;
			if ((tok = strtok_r(NULL, " \t\r", &save)))
				gi = (unsigned)strtoul(tok, NULL, 10);
			if ((tok = strtok_r(NULL, " \t\r", &save)))
				ci = (unsigned)strtoul(tok, NULL, 10);
		}
		data->gpuInstanceId = gi;
		data->computeInstanceId = ci;
		return NVML_SUCCESS;
	}
	warn("unknown event line '%s'", word);
	return -1;
}

/* A MigConfigChange due from a fixture reload. Lock held. */
static bool mig_change_next(nvmlEventSet_t set, nvmlEventData_t *data)
{
	for (unsigned k = 0; k < MAX_GPUS; k++)
		if (set->mig_pending[k]) {
			set->mig_pending[k] = false;
			memset(data, 0, sizeof(*data));
			data->device = &gpu_handles[k];
			data->eventType = nvmlEventMigConfigChange;
			data->gpuInstanceId = data->computeInstanceId = NO_ID;
			return true;
		}
	return false;
}

/* Consume complete lines of the events file after set->offset. Lock held. */
static int event_next(nvmlEventSet_t set, nvmlEventData_t *data)
{
	const char *path = getenv("FAKE_NVML_EVENTS");
	char line[512];
	FILE *f;
	int r = -1;

	if (!path || !(f = fopen(path, "re")))
		return -1;
	if (fseek(f, 0, SEEK_END) == 0 && ftell(f) < set->offset)
		set->offset = 0; /* the test truncated the file: start over */
	if (fseek(f, set->offset, SEEK_SET) == 0)
		while (r < 0 && fgets(line, sizeof(line), f)) {
			size_t n = strlen(line);

			if (n == 0 || line[n - 1] != '\n')
				break; /* a line still being written */
			set->offset += (long)n;
			line[n - 1] = 0;
			r = event_parse(set, line, data);
		}
	fclose(f);
	return r;
}

API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeoutms)
{
	long deadline = now_ms() + timeoutms;
	int r;

	for (;;) {
		SYSTEM_CALL();
		if (!set_valid(set) || !data)
			return leave(NVML_ERROR_INVALID_ARGUMENT);
		r = mig_change_next(set, data) ? NVML_SUCCESS : event_next(set, data);
		if (r >= 0)
			return leave(r);
		pthread_mutex_unlock(&lock);
		if (now_ms() >= deadline)
			return NVML_ERROR_TIMEOUT;
		sleep_ms(MIN(5, deadline - now_ms() + 1));
	}
}

/* ---- exporter counters (issue 14): field values, energy, PCIe, codecs, memory v2, GPM ------- */

/* An unsigned telemetry value, NOT_SUPPORTED when the fixture does not have it. */
static nvmlReturn_t tel_uint(const struct gpu_slot *g, const char *key, unsigned *out)
{
	return put_uint(out, tel_get(g, key));
}

API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
	json_t *v;

	DEVICE_CALL(device, GPU_ONLY);
	if (!energy)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	v = tel_get(c.g, "energy_mj");
	if (!v)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	*energy = (unsigned long long)int_or(v, 0);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned *value)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(tel_uint(c.g, "pcie_replay", value));
}

/* Encoder/decoder utilisation: MIG handles answer NOT_SUPPORTED, as for nvmlDeviceGetUtilizationRates. */
static nvmlReturn_t codec_util(const struct gpu_slot *g, const char *key, unsigned *util, unsigned *period)
{
	if (!util || !period)
		return NVML_ERROR_INVALID_ARGUMENT;
	*period = 167000; /* what an A100 reports, in us */
	return tel_uint(g, key, util);
}

API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned *util, unsigned *period)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(codec_util(c.g, "enc_util", util, period));
}

API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned *util, unsigned *period)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(codec_util(c.g, "dec_util", util, period));
}

/* PCIe throughput in KiB/s over NVML's 20 ms window: telemetry pcie_kib_per_s {tx, rx}. */
API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned *value)
{
	json_t *v;

	DEVICE_CALL(device, GPU_ONLY);
	if (!value || counter < NVML_PCIE_UTIL_TX_BYTES || counter > NVML_PCIE_UTIL_RX_BYTES)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	v = tel_get(c.g, "pcie_kib_per_s");
	if (!v)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	return leave(put_uint(value, json_object_get(v, counter == NVML_PCIE_UTIL_TX_BYTES ? "tx" : "rx")));
}

API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int *pending)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!pending)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!tel_get(c.g, "retired_pages"))
		return leave(NVML_ERROR_NOT_SUPPORTED); /* no page retirement: Ampere and newer remap rows */
	*pending = json_is_true(tel_get(c.g, "retired_pending")) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return leave(NVML_SUCCESS);
}

/* v2 adds the memory the driver reserves (telemetry memory_reserved_mib; none on a MIG handle). */
API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	nvmlMemory_t m;
	unsigned long long reserved = 0;
	nvmlReturn_t r;

	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memory->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	r = nvmlDeviceGetMemoryInfo(device, &m);
	if (r != NVML_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	if (handle_valid(device) && device->mig < 0) {
		/* a fraction of a MiB is allowed: a real H200 reserves 615.06 MiB */
		json_t *rv = tel_get(&slots[device->gpu], "memory_reserved_mib");
		reserved = json_is_real(rv) ? (unsigned long long)(json_real_value(rv) * MIB)
					    : (unsigned long long)int_or(rv, 0) * MIB;
	}
	pthread_mutex_unlock(&lock);
	memory->total = m.total;
	memory->reserved = reserved < m.free ? reserved : m.free;
	memory->used = m.used;
	memory->free = m.free - memory->reserved;
	return NVML_SUCCESS;
}

/* Clock events and violations (issue 24): telemetry pstate, enforced_power_limit_mw,
 * clocks_event_reasons, violations_ns {power, thermal, sync_boost, board_limit, low_util,
 * reliability}; absent keys answer NOT_SUPPORTED. */
API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *state)
{
	json_t *v;

	DEVICE_CALL(device, GPU_ONLY);
	if (!state)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	v = tel_get(c.g, "pstate");
	if (v)
		*state = (nvmlPstates_t)int_or(v, 32);
	return leave(v ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
}

API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned *limit)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(tel_uint(c.g, "enforced_power_limit_mw", limit));
}

API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons)
{
	json_t *v;

	DEVICE_CALL(device, GPU_ONLY);
	if (!reasons)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	v = tel_get(c.g, "clocks_event_reasons");
	if (v)
		*reasons = (unsigned long long)int_or(v, 0);
	return leave(v ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
}

API nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t policy, nvmlViolationTime_t *t)
{
	static const char *const keys[] = {"power", "thermal", "sync_boost", "board_limit", "low_util", "reliability"};
	json_t *v = NULL;

	DEVICE_CALL(device, GPU_ONLY);
	if (!t || policy < 0 || policy >= (int)(sizeof(keys) / sizeof(keys[0])))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	v = json_object_get(tel_get(c.g, "violations_ns"), keys[policy]);
	if (v) {
		t->referenceTime = (unsigned long long)now_ms() * 1000ULL;
		t->violationTime = (unsigned long long)int_or(v, 0);
	}
	return leave(v ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
}

/* Static strings of a GPU (issue 24): "serial", "vbios_version", "inforom_image_version" of the GPU or
 * its model; absent: NOT_SUPPORTED. */
static nvmlReturn_t gpu_string(const struct gpu_slot *g, const char *key, char *buf, unsigned length)
{
	json_t *v = gpu_get(g, key);

	return json_is_string(v) ? copy_str(buf, length, json_string_value(v)) : NVML_ERROR_NOT_SUPPORTED;
}

API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned length)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpu_string(c.g, "serial", serial, length));
}

API nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version, unsigned length)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpu_string(c.g, "vbios_version", version, length));
}

API nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char *version, unsigned length)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpu_string(c.g, "inforom_image_version", version, length));
}

/* "inforom_oem_version", "inforom_ecc_version", "inforom_power_version" of the GPU or its model. */
API nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, nvmlInforomObject_t object, char *version,
					     unsigned length)
{
	static const char *const keys[] = {"inforom_oem_version", "inforom_ecc_version", "inforom_power_version"};

	DEVICE_CALL(device, GPU_ONLY);
	if (object < 0 || object >= (int)(sizeof(keys) / sizeof(keys[0])))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(gpu_string(c.g, keys[object], version, length));
}

/* An enum the GPU (or its model) may set under key; absent: def, as a real driver always answers. */
static nvmlReturn_t gpu_enum(const struct gpu_slot *g, const char *key, long long def, int *out)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = (int)int_or(gpu_get(g, key), def);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpu_enum(c.g, "compute_mode", NVML_COMPUTEMODE_DEFAULT, mode));
}

API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpu_enum(c.g, "persistence_mode", NVML_FEATURE_ENABLED, mode));
}

API nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device, nvmlGpuVirtualizationMode_t *mode)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpu_enum(c.g, "virtualization_mode", 0, mode));
}

/* One field of nvmlDeviceGetFieldValues, from telemetry. */
static void field_value(const struct gpu_slot *g, nvmlFieldValue_t *f)
{
	json_t *v = NULL;

	f->timestamp = now_ms() * 1000LL;
	f->latencyUsec = 0;
	switch (f->fieldId) {
	case NVML_FI_DEV_MEMORY_TEMP:
		v = tel_get(g, "memory_temp_c");
		f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
		f->value.uiVal = (unsigned)int_or(v, 0);
		break;
	case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
	case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: {
		/* scopeId UINT_MAX: all links (nvlink_kib), else that link (nvlink_kib_links[scopeId]) */
		json_t *links = tel_get(g, "nvlink_kib_links");
		if (f->scopeId != 0xffffffffu && links && !json_object_get(json_array_get(links, f->scopeId), "tx")) {
			f->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT; /* a link this GPU does not have */
			return;
		}
		v = json_object_get(f->scopeId == 0xffffffffu ? tel_get(g, "nvlink_kib")
							      : json_array_get(links, f->scopeId),
				    f->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? "tx" : "rx");
		f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		f->value.ullVal = (unsigned long long)int_or(v, 0);
		break;
	}
	case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
	case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL:
	case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL:
	case NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL:
		/* telemetry nvlink_errors {crc_flit, crc_data, replay, recovery}: totals of all links */
		v = json_object_get(tel_get(g, "nvlink_errors"),
				    f->fieldId == NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL   ? "crc_flit"
				    : f->fieldId == NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL ? "crc_data"
				    : f->fieldId == NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL   ? "replay"
												  : "recovery");
		f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		f->value.ullVal = (unsigned long long)int_or(v, 0);
		break;
	case NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
		v = tel_get(g, "recovery_action");
		f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
		f->value.uiVal = (unsigned)int_or(v, 0);
		break;
	default:
		break;
	}
	f->nvmlReturn = v ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t *values)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (count < 0 || (count && !values))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	for (int i = 0; i < count; i++)
		field_value(c.g, &values[i]);
	return leave(NVML_SUCCESS);
}

/*
 * GPM. A sample records the fixture's "gpm" values (the GPU's telemetry, or a GPU instance's
 * "gpm") at the time of nvmlGpmSampleGet; nvmlGpmMetricsGet answers sample2's values, and only
 * for two samples of the same device and instance taken in order, as NVML needs.
 */
#define GPM_MAGIC 0x67706d73u
struct nvmlGpmSample_st {
	unsigned magic;
	bool filled;
	unsigned gpu;
	unsigned gi; /* NO_ID: the whole GPU */
	long seq;
	double value[NVML_GPM_METRIC_MAX];
	bool has[NVML_GPM_METRIC_MAX];
};
static long gpm_seq;

static const struct {
	const char *key;
	unsigned id;
} gpm_keys[] = {
    {"graphics", NVML_GPM_METRIC_GRAPHICS_UTIL},
    {"sm", NVML_GPM_METRIC_SM_UTIL},
    {"sm_occupancy", NVML_GPM_METRIC_SM_OCCUPANCY},
    {"integer", NVML_GPM_METRIC_INTEGER_UTIL},
    {"tensor", NVML_GPM_METRIC_ANY_TENSOR_UTIL},
    {"dfma", NVML_GPM_METRIC_DFMA_TENSOR_UTIL},
    {"hmma", NVML_GPM_METRIC_HMMA_TENSOR_UTIL},
    {"imma", NVML_GPM_METRIC_IMMA_TENSOR_UTIL},
    {"dram", NVML_GPM_METRIC_DRAM_BW_UTIL},
    {"fp64", NVML_GPM_METRIC_FP64_UTIL},
    {"fp32", NVML_GPM_METRIC_FP32_UTIL},
    {"fp16", NVML_GPM_METRIC_FP16_UTIL},
    {"pcie_tx_mib_s", NVML_GPM_METRIC_PCIE_TX_PER_SEC},
    {"pcie_rx_mib_s", NVML_GPM_METRIC_PCIE_RX_PER_SEC},
    {"nvlink_rx_mib_s", NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC},
    {"nvlink_tx_mib_s", NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC},
};

static bool gpm_supported(const struct gpu_slot *g)
{
	return json_is_true(gpu_get(g, "gpm_supported"));
}

API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *support)
{
	DEVICE_CALL(device, GPU_ONLY);
	if (!support)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (support->version != NVML_GPM_SUPPORT_VERSION)
		return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	support->isSupportedDevice = gpm_supported(c.g);
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *sample)
{
	struct nvmlGpmSample_st *p;

	SYSTEM_CALL();
	if (!sample)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	p = calloc(1, sizeof(*p));
	if (!p)
		return leave(NVML_ERROR_MEMORY);
	p->magic = GPM_MAGIC;
	*sample = p;
	return leave(NVML_SUCCESS);
}

API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample)
{
	if (!sample || sample->magic != GPM_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	sample->magic = 0;
	free(sample);
	return NVML_SUCCESS;
}

static nvmlReturn_t gpm_fill(const struct gpu_slot *g, unsigned gi, json_t *values, nvmlGpmSample_t sample)
{
	if (!sample || sample->magic != GPM_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!gpm_supported(g))
		return NVML_ERROR_NOT_SUPPORTED;
	memset(sample->has, 0, sizeof(sample->has));
	for (size_t i = 0; i < ELEMENTSOF(gpm_keys); i++) {
		json_t *v = json_object_get(values, gpm_keys[i].key);
		if (json_is_number(v)) {
			sample->value[gpm_keys[i].id] = json_number_value(v);
			sample->has[gpm_keys[i].id] = true;
		}
	}
	sample->filled = true;
	sample->gpu = g->index;
	sample->gi = gi;
	sample->seq = ++gpm_seq;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample)
{
	DEVICE_CALL(device, GPU_ONLY);
	return leave(gpm_fill(c.g, NO_ID, tel_get(c.g, "gpm"), sample));
}

API nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned gi, nvmlGpmSample_t sample)
{
	DEVICE_CALL(device, GPU_ONLY);
	for (unsigned j = 0; j < MAX_MIGS; j++) {
		const struct mig_slot *m = &c.g->migs[j];
		json_t *v;
		if (!m->present || m->gi != gi)
			continue;
		v = json_object_get(m->gi_spec, "gpm");
		return leave(gpm_fill(c.g, gi, v ? v : tel_get(c.g, "gpm"), sample));
	}
	return leave(NVML_ERROR_NOT_FOUND);
}

API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *get)
{
	const struct nvmlGpmSample_st *a, *b;

	SYSTEM_CALL();
	if (!get)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (get->version != NVML_GPM_METRICS_GET_VERSION)
		return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	a = get->sample1;
	b = get->sample2;
	if (get->numMetrics > NVML_GPM_METRIC_MAX || !a || !b || a == b || a->magic != GPM_MAGIC ||
	    b->magic != GPM_MAGIC || !a->filled || !b->filled || a->gpu != b->gpu || a->gi != b->gi || a->seq >= b->seq)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	for (unsigned i = 0; i < get->numMetrics; i++) {
		nvmlGpmMetric_t *m = &get->metrics[i];
		bool ok = m->metricId < NVML_GPM_METRIC_MAX && b->has[m->metricId];
		m->nvmlReturn = ok ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
		m->value = ok ? b->value[m->metricId] : 0;
		memset(&m->metricInfo, 0, sizeof(m->metricInfo));
	}
	return leave(NVML_SUCCESS);
}
/* ---- end of the exporter counters block ---------------------------------------------------- */

/*
 * ---- labels block: nvmlDeviceGetGpuFabricInfo from the GPU's (or model's) "fabric" object:
 * {"cluster_uuid": "8-4-4-4-12 hex", "clique_id": N, "state": 0..3, "status": return name}.
 * No "fabric": NOT_SUPPORTED (a GPU outside any NVLink fabric, as on PCIe systems).
 */
static void fabric_uuid(const char *s, unsigned char out[NVML_GPU_FABRIC_UUID_LEN])
{
	unsigned n = 0;

	memset(out, 0, NVML_GPU_FABRIC_UUID_LEN);
	for (; s && *s && n < 2 * NVML_GPU_FABRIC_UUID_LEN; s++) {
		int v = *s >= '0' && *s <= '9'   ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;

		if (v < 0)
			continue; /* the dashes */
		out[n / 2] = (unsigned char)(out[n / 2] | (n % 2 ? v : v << 4));
		n++;
	}
}

API nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *info)
{
	json_t *f;

	DEVICE_CALL(device, GPU_ONLY);
	if (!info)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	f = gpu_get(c.g, "fabric");
	if (!f)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	memset(info, 0, sizeof(*info));
	fabric_uuid(str_or(json_object_get(f, "cluster_uuid"), ""), info->clusterUuid);
	info->cliqueId = (unsigned)int_or(json_object_get(f, "clique_id"), 0);
	info->state = (nvmlGpuFabricState_t)int_or(json_object_get(f, "state"), NVML_GPU_FABRIC_STATE_COMPLETED);
	info->status = return_code(json_object_get(f, "status"));
	return leave(NVML_SUCCESS);
}
/* ---- end labels block ---- */

/*
 * Every entry point under its NVML_SYMBOLS field name: the assignment type-checks each prototype
 * against our ABI header, and the selftest compares each pointer with dlsym(symbol), which checks
 * that field and exported name agree.
 */
#define FAKE_FIELD(field, sym, args, req) nvmlReturn_t(*field) args;
struct fakenvml_api {
	NVML_SYMBOLS(FAKE_FIELD)
};
#undef FAKE_FIELD

API const struct fakenvml_api fakenvml_api = {
    .init = nvmlInit_v2,
    .shutdown = nvmlShutdown,
    .system_get_driver_version = nvmlSystemGetDriverVersion,
    .system_get_nvml_version = nvmlSystemGetNVMLVersion,
    .system_get_cuda_driver_version = nvmlSystemGetCudaDriverVersion,
    .device_get_count = nvmlDeviceGetCount_v2,
    .device_get_handle_by_index = nvmlDeviceGetHandleByIndex_v2,
    .device_get_handle_by_uuid = nvmlDeviceGetHandleByUUID,
    .device_get_uuid = nvmlDeviceGetUUID,
    .device_get_name = nvmlDeviceGetName,
    .device_get_minor_number = nvmlDeviceGetMinorNumber,
    .device_get_index = nvmlDeviceGetIndex,
    .device_get_pci_info = nvmlDeviceGetPciInfo_v3,
    .device_get_memory_info = nvmlDeviceGetMemoryInfo,
    .device_get_cuda_compute_capability = nvmlDeviceGetCudaComputeCapability,
    .device_get_architecture = nvmlDeviceGetArchitecture,
    .device_get_brand = nvmlDeviceGetBrand,
    .device_get_numa_node_id = nvmlDeviceGetNumaNodeId,
    .device_get_mig_mode = nvmlDeviceGetMigMode,
    .device_get_max_mig_device_count = nvmlDeviceGetMaxMigDeviceCount,
    .device_get_mig_device_handle_by_index = nvmlDeviceGetMigDeviceHandleByIndex,
    .device_is_mig_device_handle = nvmlDeviceIsMigDeviceHandle,
    .device_get_gpu_instance_id = nvmlDeviceGetGpuInstanceId,
    .device_get_compute_instance_id = nvmlDeviceGetComputeInstanceId,
    .device_get_device_handle_from_mig_device_handle = nvmlDeviceGetDeviceHandleFromMigDeviceHandle,
    .device_get_attributes = nvmlDeviceGetAttributes_v2,
    .device_get_gpu_instance_profile_info = nvmlDeviceGetGpuInstanceProfileInfo,
    .device_get_gpu_instance_by_id = nvmlDeviceGetGpuInstanceById,
    .gpu_instance_get_info = nvmlGpuInstanceGetInfo,
    .event_set_create = nvmlEventSetCreate,
    .device_register_events = nvmlDeviceRegisterEvents,
    .device_get_supported_event_types = nvmlDeviceGetSupportedEventTypes,
    .event_set_wait = nvmlEventSetWait_v2,
    .event_set_free = nvmlEventSetFree,
    .device_get_total_ecc_errors = nvmlDeviceGetTotalEccErrors,
    .device_get_utilization_rates = nvmlDeviceGetUtilizationRates,
    .device_get_temperature = nvmlDeviceGetTemperature,
    .device_get_power_usage = nvmlDeviceGetPowerUsage,
    .device_get_clock_info = nvmlDeviceGetClockInfo,
    .device_get_retired_pages = nvmlDeviceGetRetiredPages,
    .device_get_remapped_rows = nvmlDeviceGetRemappedRows,
    .device_get_topology_common_ancestor = nvmlDeviceGetTopologyCommonAncestor,
    .device_get_nvlink_state = nvmlDeviceGetNvLinkState,
    .device_get_nvlink_remote_pci_info = nvmlDeviceGetNvLinkRemotePciInfo_v2,
    .device_get_compute_running_processes = nvmlDeviceGetComputeRunningProcesses_v3,
    .device_get_process_utilization = nvmlDeviceGetProcessUtilization,
    .device_get_gpu_fabric_info = nvmlDeviceGetGpuFabricInfo, /* labels */
    /* exporter counters (issue 14) */
    .device_get_field_values = nvmlDeviceGetFieldValues,
    .device_get_total_energy_consumption = nvmlDeviceGetTotalEnergyConsumption,
    .device_get_pcie_replay_counter = nvmlDeviceGetPcieReplayCounter,
    .device_get_encoder_utilization = nvmlDeviceGetEncoderUtilization,
    .device_get_decoder_utilization = nvmlDeviceGetDecoderUtilization,
    .device_get_memory_info_v2 = nvmlDeviceGetMemoryInfo_v2,
    .device_get_pcie_throughput = nvmlDeviceGetPcieThroughput,
    .device_get_retired_pages_pending_status = nvmlDeviceGetRetiredPagesPendingStatus,
    .gpm_query_device_support = nvmlGpmQueryDeviceSupport,
    .gpm_sample_alloc = nvmlGpmSampleAlloc,
    .gpm_sample_free = nvmlGpmSampleFree,
    .gpm_sample_get = nvmlGpmSampleGet,
    .gpm_mig_sample_get = nvmlGpmMigSampleGet,
    .gpm_metrics_get = nvmlGpmMetricsGet,
    .device_get_performance_state = nvmlDeviceGetPerformanceState,
    .device_get_enforced_power_limit = nvmlDeviceGetEnforcedPowerLimit,
    .device_get_current_clocks_throttle_reasons = nvmlDeviceGetCurrentClocksThrottleReasons,
    .device_get_violation_status = nvmlDeviceGetViolationStatus,
    .device_get_serial = nvmlDeviceGetSerial,
    .device_get_vbios_version = nvmlDeviceGetVbiosVersion,
    .device_get_inforom_image_version = nvmlDeviceGetInforomImageVersion,
    .device_get_inforom_version = nvmlDeviceGetInforomVersion,
    .device_get_compute_mode = nvmlDeviceGetComputeMode,
    .device_get_persistence_mode = nvmlDeviceGetPersistenceMode,
    .device_get_virtualization_mode = nvmlDeviceGetVirtualizationMode,
    .device_get_p2p_status = nvmlDeviceGetP2PStatus,
};
