"""A mixed day: fair users, bursting teams, free and pro tenants, a credential-stuffing run and
an OTP flood, all at once, in proportions a busy API might see."""

from ratelimit_harness.locustfiles import burst, otp_flood, steady, stuffing, tenants


class Fair(steady.FairClient):
    weight = 6


class Teams(burst.BurstingClient):
    weight = 3


class Free(tenants.FreeTenant):
    weight = 3


class Pro(tenants.ProTenant):
    weight = 2


class Stuffing(stuffing.Stuffer):
    weight = 1


class OtpFlood(otp_flood.OtpFlooder):
    weight = 1
