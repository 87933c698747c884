"""Mail to a submitter through the site's SMTP server (a staff reply on their ticket).

Configured by SMTP_HOST (unset: no mail), SMTP_PORT, SMTP_STARTTLS, SMTP_USER,
SMTP_PASSWORD and MAIL_FROM. A failure is logged and reported to the caller,
never raised into the request."""
import logging
import re
import smtplib
import ssl
from email.message import EmailMessage

log = logging.getLogger(__name__)
ADDRESS = re.compile(r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+$")


def is_address(contact: str) -> bool:
    return bool(ADDRESS.match(contact or ""))


def send(config, to: str, subject: str, body: str) -> bool:
    """True when the SMTP server accepted the message."""
    host = config.get("SMTP_HOST")
    if not host or not is_address(to):
        return False
    msg = EmailMessage()
    msg["From"] = config.get("MAIL_FROM") or "gpu-troubleshooter@localhost"
    msg["To"] = to
    msg["Subject"] = subject
    msg.set_content(body)
    try:
        with smtplib.SMTP(host, int(config.get("SMTP_PORT") or 25), timeout=10) as smtp:
            if config.get("SMTP_STARTTLS"):
                smtp.starttls(context=ssl.create_default_context())
            if config.get("SMTP_USER"):
                smtp.login(config["SMTP_USER"], config.get("SMTP_PASSWORD") or "")
            smtp.send_message(msg)
        return True
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("mail to the submitter of a ticket failed: %s", exc.__class__.__name__)
        return False


def rediagnosed_body(ticket_id: int, title: str, site_name: str) -> str:
    return (f"The log you sent to the {site_name} helpdesk (ticket #{ticket_id}) had no known failure then.\n"
            f"With what the helpdesk has learned since, it is now diagnosed as:\n\n  {title}\n\n"
            "Open the private link to your diagnosis (the one you were given when you submitted the log)\n"
            "to read the fix. For your privacy this mail does not contain that link.\n")


def reply_body(ticket_id: int, text: str, site_name: str) -> str:
    return (f"The {site_name} helpdesk answered your request (ticket #{ticket_id}):\n\n{text}\n\n"
            "To answer, open the private link to your diagnosis (the one you were given when you\n"
            "submitted the log) and use the form at the bottom of the page. For your privacy this\n"
            "mail does not contain that link.\n")
