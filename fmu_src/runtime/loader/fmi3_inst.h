/* What the FMI 3.0 functions of the FMU's binary share (fmi3_loader.c: instantiation, the call
 * sequence, states and what is not provided; fmi3_values.c: the variables' values). */
#ifndef EMBED_FMI3_INST_H
#define EMBED_FMI3_INST_H

#include "fmi3Functions.h"
#include "loader.h"

#ifndef EMBED_TIME_VR              /* the value reference of the independent variable time */
#define EMBED_TIME_VR 0xFFFFFFFFu  /* (describe3.time_reference, given by fmu_src/builder) */
#endif

enum { M_INSTANTIATED, M_INIT, M_EVENT, M_STEP, M_TERMINATED };
extern const char *const MODE_NAMES[];

typedef struct {
    Inst *c2;                          /* the fmi2 instance (fmi2_loader.c) */
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    int event_mode_used;
    int mode;                          /* M_*: where the call sequence stands */
} Inst3;

/* the message "<fn>: <what>" to the master's logger; returns fmi3Error (nothing was done) */
fmi3Status refuse3(Inst3 *J, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* a type this FMU has no variable of (fmi3_values.c): any value reference given is unknown */
fmi3Status no_such_type(fmi3Instance inst, const char *fn, const char *type,
                        const fmi3ValueReference vr[], size_t nvr);

#define J_OF(inst) Inst3 *J = (Inst3 *)(inst); if (!J) return fmi3Error
/* FMI 3.0 4.2.5: a call outside the modes it is allowed in is an error; nothing is done */
#define ONLY_IN(fn, ok) if (!(ok)) return refuse3(J, fn, "not allowed in %s (FMI 3.0, section " \
    "4.2.5)", MODE_NAMES[J->mode])

#endif
