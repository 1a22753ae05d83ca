/* sd-login's types, for tokenpind, which loads libsystemd with dlopen (so it runs without systemd): no `link`.
   Each typedef is the type of the function of that name, taken from libsystemd's own header, so a lookup
   cast to it cannot disagree with the library's signature. */
#include <systemd/sd-login.h>

typedef __typeof__(&sd_get_seats) tokenpin_sd_get_seats;
typedef __typeof__(&sd_seat_get_active) tokenpin_sd_seat_get_active;
typedef __typeof__(&sd_session_is_remote) tokenpin_sd_session_is_remote;
typedef __typeof__(&sd_session_is_active) tokenpin_sd_session_is_active;
typedef __typeof__(&sd_session_get_uid) tokenpin_sd_session_get_uid;
