"""Real proxies with authentication for tests (not fakes): squid (HTTP CONNECT, basic
auth through its basic_ncsa_auth helper) and Dante (SOCKS5, `socksmethod: username`),
each started on 127.0.0.1 with its own configuration in a temporary folder, and a
port each refuses by rule (squid: 403, Dante: SOCKS reply 2).

Dante checks a username against the system's password database, so it runs in a
mount namespace of its own (`unshare -m`, root) where /etc/passwd and /etc/shadow are
replaced by files naming the test user: the system's own files are never touched.
`make test` installs both on Debian (packages squid, dante-server).

  start(folder) -> Proxies: .user, .password, .squid / .dante (ports, or None), .why
  (why one is missing), .blocked (the refused port), .stop()
"""
import os
import shutil
import socket
import subprocess
import time

SQUID = shutil.which("squid") or "/usr/sbin/squid"
DANTED = shutil.which("danted") or "/usr/sbin/danted"
NCSA = "/usr/lib/squid/basic_ncsa_auth"
USER = "mimiproxy"
PASSWORD = "s3cret pass:1"  # a space and a colon: both must survive Basic and RFC 1929


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hash(password):
    out = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=password.encode(),
                         capture_output=True, check=True)
    return out.stdout.decode().strip()


def _listening(port, proc, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


class Proxies:
    def __init__(self, folder):
        self.dir = str(folder)
        os.chmod(self.dir, 0o755)  # squid drops to its own user and reads from here
        self.user, self.password = USER, PASSWORD
        self.blocked = _free_port()
        self.squid = self.dante = None
        self.why = {}
        self.procs = []
        self.hash = _hash(PASSWORD)

    def _write(self, name, text, mode=0o644):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def start_squid(self):
        if not (os.path.exists(SQUID) and os.path.exists(NCSA)):
            self.why["squid"] = "squid is not installed (Debian: apt-get install squid)"
            return
        port = _free_port()
        users = self._write("squid.passwd", "%s:%s\n" % (USER, self.hash))
        logs = os.path.join(self.dir, "squid-logs")
        os.makedirs(logs, exist_ok=True)
        os.chmod(logs, 0o777)
        conf = self._write("squid.conf", "\n".join([
            "http_port 127.0.0.1:%d" % port,
            "pid_filename none",
            "cache_log %s/cache.log" % logs,
            "access_log none",
            "cache deny all",
            "coredump_dir %s" % logs,
            "shutdown_lifetime 0 seconds",
            "auth_param basic program %s %s" % (NCSA, users),
            "auth_param basic realm mimiclaw-test",
            "acl authed proxy_auth REQUIRED",
            "acl blocked port %d" % self.blocked,
            "http_access deny blocked",
            "http_access allow authed",
            "http_access deny all", ""]))
        p = subprocess.Popen([SQUID, "-N", "-f", conf], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        self.procs.append(p)
        if _listening(port, p):
            self.squid = port
        else:
            self.why["squid"] = "squid did not start: %s" % _said(p, os.path.join(logs, "cache.log"))

    def start_dante(self):
        if not os.path.exists(DANTED):
            self.why["dante"] = "Dante is not installed (Debian: apt-get install dante-server)"
            return
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.why["dante"] = "Dante's username method needs root (a mount namespace for its password files)"
            return
        port = _free_port()
        with open("/etc/passwd") as f:
            system = [ln for ln in f.read().splitlines() if not ln.startswith(USER + ":")]
        passwd = self._write("passwd", "\n".join(system + ["%s:x:4242:4242::/nonexistent:/bin/false" % USER]) + "\n")
        shadow = self._write("shadow", "%s:%s:19000:0:99999:7:::\n" % (USER, self.hash), 0o600)
        log = os.path.join(self.dir, "danted.log")
        conf = self._write("danted.conf", "\n".join([
            "logoutput: %s" % log,
            "internal: 127.0.0.1 port = %d" % port,
            "external: 127.0.0.1",
            "clientmethod: none",
            "socksmethod: username",
            "user.privileged: root",
            "user.unprivileged: nobody",
            "client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }",
            "socks block { from: 0.0.0.0/0 to: 0.0.0.0/0 port = %d }" % self.blocked,
            "socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect }",
            ""]))
        script = "mount --bind %s /etc/passwd && mount --bind %s /etc/shadow && exec %s -f %s -N 1" % (
            passwd, shadow, DANTED, conf)
        p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(p)
        if _listening(port, p):
            self.dante = port
        else:
            self.why["dante"] = "Dante did not start: %s" % _said(p, log)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if p.stderr:
                p.stderr.close()
        self.procs = []

    def info(self):
        return {"user": self.user, "password": self.password, "squid": self.squid,
                "dante": self.dante, "blocked": self.blocked, "why": self.why}


def _said(p, log):
    if p.poll() is None:
        p.terminate()
        p.wait()
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    try:
        with open(log) as f:
            err += f.read()
    except OSError:
        pass
    return err.strip()[-600:] or "(nothing said)"


def start(folder):
    px = Proxies(folder)
    px.start_squid()
    px.start_dante()
    return px
