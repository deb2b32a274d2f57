"""A small lexicon of related words in the vocabulary of tools, for query expansion.

People phrase tasks ("did the nightly build pass?"); tool descriptions phrase capabilities
("status and conclusion of a pipeline run"). Each group below holds words that often stand
for one another in that setting. The groups are general vocabulary of software, files,
version control, chat, calendars, maps, the web and databases; they name no tool, and a
query term brings in its group's other words at a reduced weight, never replacing it.
Lines starting with ``=`` are near-synonyms and weigh more than the merely related ones.

`query_intent()` reads whether a query asks to look at something (a question, "show ...")
or to change something (an imperative such as "create", "send", "delete"), so a ranker can
prefer read-only tools for the first and the others for the second.
"""

from __future__ import annotations

from functools import cache

from .text import terms

_GROUPS = """
= web internet online
= folder directory dir
= bug issue ticket
= pr pull request
= picture image photo
= repo repository
= db database
= meeting event appointment
= forget delete remove erase
= remember memory knowledge recall
= say message post tell
= coordinates latitude longitude
= kick trigger start launch
= rerun retry
= grab download fetch retrieve
= person people user member colleague coworker
= last latest newest recent
mention mentions contain contains include match matching
build pipeline ci workflow job run
pass passed succeed success green fail failed failure broken red status conclusion outcome
nightly scheduled cron daily
log logs output console stdout stderr trace
test tests testcase spec suite
flaky intermittent unstable flip
artifact artifacts package binary bundle report coverage
trigger start kick launch rerun retry restart
cancel stop abort halt kill
deploy deployment release ship rollout publish
bug issue ticket problem defect report crash error
pull request pr merge review change changes proposed
review approve approval reviewer reviewers
comment reply respond note
repository repo project codebase upstream
fork copy clone
code source function definition defined symbol
branch branches checkout switch
commit commits history log revision
diff difference differences compare changes changed modified
stage staged unstage index add
blame author wrote modified line
file files document documents
folder directory directories dir path
tree layout structure hierarchy overview
rename move relocate
read open show view display contents cat look
write save create store put
edit modify update change replace patch
delete remove drop erase forget wipe clear purge
search find look locate lookup query grep
list enumerate show all which available exist existing
info metadata details size modified timestamp properties
message messages post send say tell notify announce chat
channel room conversation
thread replies reply
reaction emoji react thumbs like
user users member members person people profile colleague
team workspace organization
place places poi restaurant cafe coffee shop shops store business bar museum hotel
address location coordinates latitude longitude position where
geocode coordinates address
route directions drive driving navigate walk transit way
distance far travel duration long between
elevation altitude height high sea level
web internet online website page
news headlines articles article press
image images picture pictures photo photos
video videos clip tutorial watch
remember memory memories knowledge recall fact facts observation observations forget track
entity entities node nodes person concept
relation relations relationship link connect works
graph knowledge
time clock now current date today
timezone zone timezones tz
convert conversion translate
url link page address endpoint
fetch download get retrieve grab pull
raw body response json verbatim
header headers status redirect alive head http
calendar calendars schedule agenda
event events meeting meetings appointment appointments invite invitation lunch session
book schedule arrange set plan
free available availability slot slots busy
accept decline rsvp invitation respond
move reschedule shift postpone
tomorrow today week day month date
database db sql table tables schema query rows
select query count how many
column columns field fields type types structure
slow performance plan explain index indexes speed
insert update delete statement alter drop mutate
size sizes space disk storage bytes big largest
csv export dump
index indexes key keys unique
allowed permitted access permission permissions
= worksheet sheet tab
= spreadsheet workbook xlsx excel
cell cells range ranges row rows column columns
comment comments note notes annotation remark
bold italic underline font color colour background fill border style format formatting
duplicate copy clone
paper papers preprint preprints publication publications
cite cites cited citation citations bibliography
follow following watch watching subscribe alert alerts
unfollow unwatch unsubscribe
contact contacts person entity
= fact observation
logo picture image icon
"""


SYNONYM = 1.0
"""Relative strength of a near-synonym; a merely related word counts `RELATED`."""
RELATED = 0.5


@cache
def related_terms() -> dict[str, dict[str, float]]:
    """Each stemmed term mapped to its related stemmed terms and their relative strength."""
    related: dict[str, dict[str, float]] = {}
    for line in _GROUPS.strip().splitlines():
        strength = SYNONYM if line.startswith("=") else RELATED
        group = set(terms(line.lstrip("= ")))
        for term in group:
            others = related.setdefault(term, {})
            for other in group - {term}:
                others[other] = max(others.get(other, 0.0), strength)
    return related


_QUESTION_WORDS_TEXT = """
    what which who whom whose when where why how did does do is are was were any can
    could show list find search look display view see check get read tell
"""
_QUESTION_WORDS = frozenset(_QUESTION_WORDS_TEXT.split())
_CHANGE_VERBS_TEXT = """
    add append apply approve archive ask assign book cancel change checkout close
    comment commit connect create decline delete drop edit execute export file fork
    forget give import insert invite kick label leave make mark merge move open post
    push put record register remember remove rename reopen replace reply request rerun
    reschedule reset restart retry revert run save schedule send set stage start stop
    submit switch tag tell trigger unstage update upload write
"""
_CHANGE_VERBS = frozenset(_CHANGE_VERBS_TEXT.split())


def query_intent(query: str) -> str | None:
    """ "read" for a question or a request to show something, "change" for an imperative that
    changes something, None when the query does not say."""
    words = [word.lower() for word in query.replace("?", " ? ").split()]
    while words and words[0] in ("please", "can", "could", "would", "you", "let's", "lets"):
        if words[0] in ("can", "could", "would") and "?" not in words:
            return None
        words = words[1:]
    if not words:
        return None
    first = words[0].strip(",.!:;")
    if first == "tell" and len(words) > 1 and words[1] == "me":
        return "read"
    if first in _CHANGE_VERBS:
        return "change"
    if first in _QUESTION_WORDS or query.rstrip().endswith("?"):
        return "read"
    return None
