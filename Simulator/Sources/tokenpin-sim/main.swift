// tokenpin-sim: plugs the simulated OpenPGP card into a real pcscd through the vpcd reader driver.
//
// vpcd (Debian vsmartcard-vpcd) listens on TCP; the virtual card connects to it. Every message both ways is a
// 2-byte big-endian length and that many bytes. From vpcd a 1-byte message is a control code (0 power off,
// 1 power on, 2 reset, 4 send the ATR); anything longer is a command APDU, answered by the response APDU.

internal import TokenpinSystem

CurrentProcess.exit(run())
