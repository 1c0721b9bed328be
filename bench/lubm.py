"""LUBM-shaped university data and an update stream over it, both deterministic for a seed.

Why our own generator: the LUBM generator (UBA) is a Java download that cannot be fetched here, and
a benchmark of *continuous* queries needs an update stream the original does not have. The shape
follows UBA (classes, properties, IRIs like ``http://www.Department0.University0.edu/FullProfessor3``,
per-department proportions of faculty, students, courses, groups and publications) with two knobs
and one liberty:

* ``scale`` is the number of universities; ``departments`` per university (UBA has 15-25) is
  small by default (2) so that scale 1 is about 13k triples and 1M triples is reached near scale 75;
* a degree is from one of ``max(scale, 10)`` universities, so about one in ten is from the
  student's own university at every scale (the triangle queries keep a steady share of answers);
* a few undergraduates hold an earlier undergraduate degree (UBA gives them none), so the
  undergraduate triangle query does not stay empty.

Every university draws from its own ``Random(f"{seed}:{u}")``: adding universities leaves the
existing ones' entities and triples as they were (only the choice of degree universities, which
depends on ``scale``, differs).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Iterator

UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"

Triple = tuple[str, str, str]
#: One update: ``("+" | "-", (s, p, o))`` with terms in N-Triples syntax.
Update = tuple[str, Triple]

FACULTY_KINDS = ("FullProfessor", "AssociateProfessor", "AssistantProfessor", "Lecturer")
#: UBA's per-department ranges (inclusive): faculty counts and publications per faculty member.
FACULTY_RANGE = {"FullProfessor": (7, 10), "AssociateProfessor": (10, 14),
                 "AssistantProfessor": (8, 11), "Lecturer": (5, 7)}
PUBLICATIONS = {"FullProfessor": (15, 20), "AssociateProfessor": (10, 18),
                "AssistantProfessor": (5, 10), "Lecturer": (0, 5)}
STREAM_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def ub(name: str) -> str:
    """A class or property of the univ-bench ontology as an N-Triples IRI."""
    return f"<{UB}{name}>"


def literal(text: str) -> str:
    """A plain literal (generated text never needs escaping)."""
    return f'"{text}"'


def university_iri(u: int) -> str:
    return f"<http://www.University{u}.edu>"


def department_iri(d: int, u: int) -> str:
    return f"<http://www.Department{d}.University{u}.edu>"


@dataclass
class Department:
    """What the stream needs to know of a department to add entities to it."""

    iri: str
    university: str
    host: str                                   # "Department0.University0.edu"
    faculty: dict[str, list[str]] = field(default_factory=dict)
    courses: list[str] = field(default_factory=list)
    graduate_courses: list[str] = field(default_factory=list)
    undergraduates: list[str] = field(default_factory=list)
    graduates: list[str] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)

    def new_iri(self, kind: str) -> str:
        """The next unused entity IRI of ``kind`` in this department (``.../Course42``)."""
        n = self.counters.get(kind, 0)
        self.counters[kind] = n + 1
        return f"<http://www.{self.host}/{kind}{n}>"

    def professors(self) -> list[str]:
        return [p for kind in FACULTY_KINDS[:3] for p in self.faculty.get(kind, [])]

    def all_faculty(self) -> list[str]:
        return [p for kind in FACULTY_KINDS for p in self.faculty.get(kind, [])]


@dataclass
class Dataset:
    """The initial graph (distinct triples, in generation order) and its departments."""

    triples: list[Triple]
    departments: list[Department]
    universities: int


class _Builder:
    """Emits the triples of entities; shared by the initial data and the stream's new entities."""

    def __init__(self, rng: random.Random, degree_universities: int) -> None:
        self.rng = rng
        self.degree_universities = degree_universities

    def degree_from(self) -> str:
        return university_iri(self.rng.randrange(self.degree_universities))

    def person(self, dept: Department, iri: str, kind: str) -> list[Triple]:
        local = iri.rsplit("/", 1)[1].rstrip(">")
        return [(iri, RDF_TYPE, ub(kind)), (iri, ub("name"), literal(local)),
                (iri, ub("emailAddress"), literal(f"{local}@{dept.host}")),
                (iri, ub("telephone"), literal(f"xxx-{self.rng.randrange(1000):03d}-{self.rng.randrange(10000):04d}"))]

    def faculty(self, dept: Department, kind: str) -> list[Triple]:
        iri = dept.new_iri(kind)
        dept.faculty.setdefault(kind, []).append(iri)
        out = self.person(dept, iri, kind) + [(iri, ub("worksFor"), dept.iri)]
        out += [(iri, ub(f"{d}DegreeFrom"), self.degree_from()) for d in ("undergraduate", "masters", "doctoral")]
        out.append((iri, ub("researchInterest"), literal(f"Research{self.rng.randrange(30)}")))
        for _ in range(self.rng.randint(1, 2)):
            out += self.course(dept, iri, graduate=False)
        for _ in range(self.rng.randint(1, 2)):
            out += self.course(dept, iri, graduate=True)
        return out

    def course(self, dept: Department, teacher: str, graduate: bool) -> list[Triple]:
        kind = "GraduateCourse" if graduate else "Course"
        iri = dept.new_iri(kind)
        (dept.graduate_courses if graduate else dept.courses).append(iri)
        return [(iri, RDF_TYPE, ub(kind)), (iri, ub("name"), literal(iri.rsplit("/", 1)[1].rstrip(">"))),
                (teacher, ub("teacherOf"), iri)]

    def publication(self, dept: Department, authors: list[str]) -> list[Triple]:
        iri = dept.new_iri("Publication")
        out = [(iri, RDF_TYPE, ub("Publication")), (iri, ub("name"), literal(iri.rsplit("/", 1)[1].rstrip(">")))]
        return out + [(iri, ub("publicationAuthor"), a) for a in authors]

    def undergraduate(self, dept: Department) -> list[Triple]:
        iri = dept.new_iri("UndergraduateStudent")
        dept.undergraduates.append(iri)
        out = self.person(dept, iri, "UndergraduateStudent") + [(iri, ub("memberOf"), dept.iri)]
        for course in self.rng.sample(dept.courses, min(len(dept.courses), self.rng.randint(2, 4))):
            out.append((iri, ub("takesCourse"), course))
        if self.rng.random() < 0.2 and dept.professors():
            out.append((iri, ub("advisor"), self.rng.choice(dept.professors())))
        if self.rng.random() < 0.05:
            out.append((iri, ub("undergraduateDegreeFrom"), self.degree_from()))
        return out

    def graduate(self, dept: Department) -> list[Triple]:
        iri = dept.new_iri("GraduateStudent")
        dept.graduates.append(iri)
        out = self.person(dept, iri, "GraduateStudent") + [(iri, ub("memberOf"), dept.iri),
                                                           (iri, ub("undergraduateDegreeFrom"), self.degree_from())]
        for course in self.rng.sample(dept.graduate_courses, min(len(dept.graduate_courses), self.rng.randint(1, 3))):
            out.append((iri, ub("takesCourse"), course))
        if dept.professors():
            out.append((iri, ub("advisor"), self.rng.choice(dept.professors())))
        return out

    def research_group(self, dept: Department) -> list[Triple]:
        iri = dept.new_iri("ResearchGroup")
        return [(iri, RDF_TYPE, ub("ResearchGroup")), (iri, ub("subOrganizationOf"), dept.iri)]


def _department(builder: _Builder, d: int, u: int) -> tuple[Department, list[Triple]]:
    rng = builder.rng
    dept = Department(department_iri(d, u), university_iri(u), f"Department{d}.University{u}.edu")
    out: list[Triple] = [(dept.iri, RDF_TYPE, ub("Department")), (dept.iri, ub("name"), literal(f"Department{d}")),
                         (dept.iri, ub("subOrganizationOf"), dept.university)]
    for kind in FACULTY_KINDS:
        for _ in range(rng.randint(*FACULTY_RANGE[kind])):
            out += builder.faculty(dept, kind)
    out.append((dept.faculty["FullProfessor"][0], ub("headOf"), dept.iri))
    n_faculty = len(dept.all_faculty())
    for _ in range(n_faculty * rng.randint(8, 14)):
        out += builder.undergraduate(dept)
    for _ in range(n_faculty * rng.randint(3, 4)):
        out += builder.graduate(dept)
    for kind in FACULTY_KINDS:
        for member in dept.faculty[kind]:
            for _ in range(rng.randint(*PUBLICATIONS[kind])):
                coauthors = rng.sample(dept.graduates, min(len(dept.graduates), rng.randint(0, 2)))
                out += builder.publication(dept, [member] + coauthors)
    for _ in range(rng.randint(10, 20)):
        out += builder.research_group(dept)
    return dept, out


def generate(scale: int, departments: int = 2, seed: int = 0) -> Dataset:
    """The initial graph: ``scale`` universities of ``departments`` departments each."""
    if scale < 1 or departments < 1:
        raise ValueError("scale and departments must be at least 1")
    triples: list[Triple] = []
    depts: list[Department] = []
    for u in range(scale):
        builder = _Builder(random.Random(f"{seed}:{u}"), max(scale, 10))
        university = university_iri(u)
        triples += [(university, RDF_TYPE, ub("University")), (university, ub("name"), literal(f"University{u}"))]
        for d in range(departments):
            dept, out = _department(builder, d, u)
            depts.append(dept)
            triples += out
    return Dataset(list(dict.fromkeys(triples)), depts, scale)


class UpdateStream:
    """Batches of updates over a :class:`Dataset`: deletes of present triples, re-inserts of deleted
    ones and inserts of new entities (students taking courses, advisors, publications, faculty,
    courses, research groups) so that every query's answers move.

    Each update changes the graph (no inserts of present or deletes of absent triples), so a batch
    of ``n`` updates is ``n`` effective changes. One new entity in ten joins
    ``Department0.University0`` (the queries' constant), so the selective queries move too.
    """

    def __init__(self, dataset: Dataset, seed: int = 0, delete_ratio: float = 0.3,
                 reinsert_ratio: float = 0.3) -> None:
        if not 0 <= delete_ratio < 1 or not 0 <= reinsert_ratio <= 1:
            raise ValueError("delete ratio must be in [0, 1) and re-insert ratio in [0, 1]")
        self.rng = random.Random(f"stream:{seed}")
        self.builder = _Builder(self.rng, max(dataset.universities, 10))
        self.departments = dataset.departments
        self.delete_ratio = delete_ratio
        self.reinsert_ratio = reinsert_ratio
        self._graph: list[Triple] = list(dataset.triples)
        self._index: dict[Triple, int] = {t: i for i, t in enumerate(self._graph)}
        self._deleted: list[Triple] = []
        self._pending: list[Triple] = []

    @property
    def graph(self) -> set[Triple]:
        """The graph after the updates handed out so far."""
        return set(self._graph)

    def __len__(self) -> int:
        return len(self._graph)

    def _add(self, triple: Triple) -> None:
        self._index[triple] = len(self._graph)
        self._graph.append(triple)

    def _remove_at(self, i: int) -> Triple:
        triple, last = self._graph[i], self._graph[-1]
        self._graph[i] = last
        self._index[last] = i
        self._graph.pop()
        del self._index[triple]
        return triple

    def _department(self) -> Department:
        return self.departments[0] if self.rng.random() < 0.1 else self.rng.choice(self.departments)

    def _new_entity(self) -> list[Triple]:
        """The triples of one new entity or relationship, chosen by LUBM-like weights."""
        b, dept, roll = self.builder, self._department(), self.rng.random()
        if roll < 0.40:
            return b.undergraduate(dept)
        if roll < 0.55:
            return b.graduate(dept)
        if roll < 0.65 and dept.undergraduates and dept.professors():
            return [(self.rng.choice(dept.undergraduates), ub("advisor"), self.rng.choice(dept.professors()))]
        if roll < 0.75 and dept.undergraduates and dept.courses:
            return [(self.rng.choice(dept.undergraduates), ub("takesCourse"), self.rng.choice(dept.courses))]
        if roll < 0.85:
            return b.publication(dept, [self.rng.choice(dept.all_faculty())])
        if roll < 0.90:
            return b.course(dept, self.rng.choice(dept.all_faculty()), graduate=self.rng.random() < 0.3)
        if roll < 0.95:
            return b.research_group(dept)
        return b.faculty(dept, self.rng.choice(FACULTY_KINDS))

    def _insert(self) -> Triple:
        if self._deleted and self.rng.random() < self.reinsert_ratio:
            i = self.rng.randrange(len(self._deleted))
            self._deleted[i], self._deleted[-1] = self._deleted[-1], self._deleted[i]
            triple = self._deleted.pop()
            if triple not in self._index:
                return triple
        while True:
            if not self._pending:
                self._pending = self._new_entity()[::-1]
            triple = self._pending.pop()
            if triple not in self._index:
                return triple

    def next_batch(self, size: int) -> list[Update]:
        """``size`` updates, applied to the stream's graph as they are handed out."""
        batch: list[Update] = []
        for _ in range(size):
            if self._graph and self.rng.random() < self.delete_ratio:
                triple = self._remove_at(self.rng.randrange(len(self._graph)))
                self._deleted.append(triple)
                batch.append(("-", triple))
            else:
                triple = self._insert()
                self._add(triple)
                batch.append(("+", triple))
        return batch

    def unrelated_batch(self, size: int, tag: str) -> list[Update]:
        """``size`` inserts of triples no benchmark query can match (a predicate outside the
        ontology): the lakegraph *floor* batch. They do not enter the stream's graph."""
        pred = f"<http://example.org/bench/floor-{tag}>"
        return [("+", (f"<http://example.org/bench/n{i}>", pred, literal(str(i)))) for i in range(size)]


# -- files ------------------------------------------------------------------------------------------
def write_ntriples(path: Path, triples: Iterable[Triple]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        handle.writelines(f"{s} {p} {o} .\n" for s, p, o in triples)
    return path


class MessageWriter:
    """Writes batches as JSON Lines landing files, one message per line, times one ms apart."""

    def __init__(self, start: datetime = STREAM_START) -> None:
        self.clock = start

    def messages(self, batch: Iterable[Update]) -> Iterator[dict]:
        for op, (s, p, o) in batch:
            self.clock += timedelta(milliseconds=1)
            yield {"time": self.clock.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", "op": op, "s": s, "p": p, "o": o}

    def write(self, path: Path, batch: Iterable[Update]) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(m) + "\n" for m in self.messages(batch))
        return path

