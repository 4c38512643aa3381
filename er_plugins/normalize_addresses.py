"""The ``address`` normalizer (see :mod:`er_plugins.normalizers` for the family): ``text`` and the USPS
Publication 28 abbreviations of street suffixes, unit designators and directionals."""

from __future__ import annotations

import re
from typing import ClassVar

import numpy as np

from er_framework.components import Normalizer
from er_plugins.normalize_text import SEP, PerValue, Value, ascii_texts, by_parts, text_key

__all__ = ["ADDRESS_TOKENS", "Address"]


# ---------------------------------------------------------------------------
# addresses

# USPS Publication 28, Appendix C1 (street suffixes): "canonical=variant,..."
# (single-word entries, as transcribed in the usaddress-scourgify package, MIT
# licence; "la", "cr" and "ck" left out: Spanish article / county road).
_C1 = """
    aly=allee,alley,ally anx=anex,annex,annx arc=arcade ave=av,aven,avenu,avenue,avn,avnue
    bch=beach bg=burg bgs=burgs blf=bluf,bluff blfs=bluffs blvd=boul,boulevard,boulv
    bnd=bend br=branch,brnch brg=brdge,bridge brk=brook brks=brooks btm=bot,bottm,bottom
    byp=bypa,bypas,bypass,byps byu=bayoo,bayou cir=circ,circl,circle,crcl,crcle
    cirs=circles clb=club clf=cliff clfs=cliffs cmn=common cor=corner cors=corners
    cp=camp,cmp cpe=cape cres=crecent,crescent,cresent,crscnt,crsent,crsnt crk=creek
    crse=course crst=crest cswy=causeway,causway ct=court,crt
    ctr=cen,cent,center,centr,centre,cnter,cntr ctrs=centers cts=courts curv=curve cv=cove
    cvs=coves cyn=canyn,canyon,cnyn dl=dale dm=dam dr=driv,drive,drv drs=drives
    dv=div,divide,dvd est=estate ests=estates expy=exp,expr,express,expressway,expw
    ext=extension,extn,extnsn exts=extensions fld=field flds=fields fls=falls flt=flat
    flts=flats frd=ford frds=fords frg=forg,forge frgs=forges frk=fork frks=forks
    frst=forest,forests fry=ferry,frry ft=fort,frt fwy=freeway,freewy,frway,frwy
    gdn=garden,gardn,grden,grdn gdns=gardens,grdns gln=glen glns=glens grn=green
    grns=greens grv=grov,grove grvs=groves gtwy=gateway,gatewy,gatway,gtway
    hbr=harb,harbor,harbr,hrbor hbrs=harbors hl=hill hls=hills
    holw=hllw,hollow,hollows,holws hts=height,heights,hgts,ht hvn=haven,havn
    hwy=highway,highwy,hiway,hiwy,hway inlt=inlet is=island,islnd isle=isles
    iss=islands,islnds jct=jction,jctn,junction,junctn,juncton jcts=jctns,junctions
    knl=knol,knoll knls=knolls ky=key kys=keys lck=lock lcks=locks ldg=ldge,lodg,lodge
    lf=loaf lgt=light lgts=lights lk=lake lks=lakes ln=lane,lanes lndg=landing,lndng
    loop=loops mdw=meadow mdws=meadows,medows ml=mill mls=mills mnr=manor
    mnrs=manors msn=mission,missn,mssn mt=mnt,mount mtn=mntain,mntn,mountain,mountin,mtin
    mtns=mntns,mountains mtwy=motorway nck=neck opas=overpass orch=orchard,orchrd oval=ovl
    park=parks,pk,prk path=paths pike=pikes
    pkwy=parkway,parkways,parkwy,pkway,pkwys,pky pl=place pln=plain plns=plaines,plains
    plz=plaza,plza pne=pine pnes=pines pr=prairie,prarie,prr prt=port prts=ports
    psge=passage pt=point pts=points radl=rad,radial,radiel rd=road rdg=rdge,ridge
    rdgs=ridges rds=roads riv=river,rivr,rvr rnch=ranch,ranches,rnchs rpd=rapid
    rpds=rapids rst=rest rte=route shl=shoal shls=shoals shr=shoar,shore
    shrs=shoars,shores skwy=skyway smt=sumit,sumitt,summit spg=spng,spring,sprng
    spgs=spngs,springs,sprngs spur=spurs sq=sqr,sqre,squ,square sqs=sqrs,squares
    st=str,street,strt sta=station,statn,stn
    stra=strav,strave,straven,stravenue,stravn,strvn,strvnue strm=stream,streme sts=streets
    ter=terr,terrace tpke=tpk,trnpk,trpk,turnpike,turnpk trak=track,tracks,trk,trks
    trce=trace,traces trfy=trafficway trl=tr,trail,trails,trls trwy=throughway
    tunl=tunel,tunls,tunnel,tunnels,tunnl un=union uns=unions upas=underpass
    via=vdct,viadct,viaduct vis=vist,vista,vst,vsta vl=ville
    vlg=vill,villag,village,villg,villiage vlgs=villages vly=valley,vally,vlly vlys=valleys
    vw=view vws=views walk=walks way=wy wl=well wls=wells
    xing=crossing,crssing,crssng xrd=crossroad
"""
# USPS Publication 28, Appendix C2 (secondary unit designators), a few common
# variants added; "key" is left to C1 (-> "ky").
_C2 = """
    apt=apartment,appt,apmt bsmt=basement bldg=building,bld,bldng dept=department
    fl=floor,flr frnt=front hngr=hanger,hangar lbby=lobby lowr=lower ofc=office
    ph=penthouse rm=room spc=space ste=suite,suit trlr=trailer uppr=upper
    lot pier rear side slip stop unit
"""
# USPS Publication 28 directionals; and "saint" -> "st" (not USPS: St. Paul == Saint Paul).
_DIRECTIONALS = """
    n=north s=south e=east w=west ne=northeast nw=northwest se=southeast sw=southwest st=saint
"""


def _parse_table(*texts: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for text in texts:
        for item in text.split():
            canon, _, variants = item.partition("=")
            for v in [canon, *filter(None, variants.split(","))]:
                table.setdefault(v, canon)
    return table


#: address token -> its USPS abbreviation.
ADDRESS_TOKENS: dict[str, str] = _parse_table(_C1, _C2, _DIRECTIONALS)
_UNIT_DESIGNATORS = frozenset(_parse_table(_C2).values())
_COMPASS_PAIRS = {
    ("north", "east"): "ne", ("north", "west"): "nw", ("south", "east"): "se", ("south", "west"): "sw",
}  # fmt: skip
_ADDRESS_PAIRS = {("p", "o"): "po", ("post", "office"): "po", **_COMPASS_PAIRS}
_ADDRESS_SPECIAL = frozenset({"#", "pob"} | {a for a, _ in _ADDRESS_PAIRS})


def _address(s: str) -> str:
    if "#" in s or "\uff03" in s:  # "#" (or its full-width form) is a unit designator, not punctuation
        parts = s.replace("\uff03", "#").split("#")
        tokens = text_key(parts[0]).split()
        for part in parts[1:]:
            tokens.append("#")
            tokens.extend(text_key(part).split())
    else:
        tokens = text_key(s).split()
        if _ADDRESS_SPECIAL.isdisjoint(tokens):
            get = ADDRESS_TOKENS.get
            return " ".join([get(t, t) for t in tokens])
    out: list[str] = []
    i, n = 0, len(tokens)
    get = ADDRESS_TOKENS.get
    while i < n:
        t = tokens[i]
        if i + 1 < n and (t, tokens[i + 1]) in _ADDRESS_PAIRS:
            out.append(_ADDRESS_PAIRS[(t, tokens[i + 1])])
            i += 2
            continue
        if t == "#":
            if not (out and out[-1] in _UNIT_DESIGNATORS):
                out.append("apt")
        elif t == "pob":
            out.extend(("po", "box"))
        else:
            out.append(get(t, t))
        i += 1
    return " ".join(out)


def _make_address() -> PerValue:
    return _address


# ---------------------------------------------------------------------------
# batches (see er_plugins.normalize_text)

#: tokens that :func:`_address` reads with their neighbour ("p o", "post office", "north east"), or "pob"
_ADDRESS_NEIGHBOURS = tuple(sorted(_ADDRESS_SPECIAL - {"#"}))


def _ascii_addresses(values: list[str], big: str) -> list[Value]:
    """:func:`_address` of ASCII values without ``#``: texts joined by `` NUL ``, split into tokens, each token
    mapped (``ADDRESS_TOKENS``) and joined again; values with a token of :data:`_ADDRESS_NEIGHBOURS` one by one."""
    texts = ascii_texts(big)
    joined = f" {SEP} ".join(texts)
    tokens = joined.split(" ")
    out: list[Value] = list(" ".join(map(ADDRESS_TOKENS.get, tokens, tokens)).split(f" {SEP} "))
    padded = f" {joined} "
    hits: list[int] = []
    for tok in _ADDRESS_NEIGHBOURS:
        needle = f" {tok} "
        i = padded.find(needle)
        while i >= 0:
            hits.append(i)
            i = padded.find(needle, i + 1)
    if hits:
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 3
        starts = np.cumsum(lengths) - lengths
        for k in np.unique(np.searchsorted(starts, np.asarray(hits, dtype=np.int64), side="right") - 1).tolist():
            out[k] = _address(values[k])
    return out


def _addresses(values: list[str]) -> list[Value]:
    """``[_address(v) for v in values]``."""
    return by_parts(values, _ascii_addresses, _address, re.compile("#"))


# ---------------------------------------------------------------------------
# the component


class Address(Normalizer):
    name = "address"
    summary = "text, then USPS Pub. 28 street suffix, unit and directional abbreviations (street -> st)"
    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        return _make_address()

    def normalize(self, values: list[str]) -> list[str | None]:
        return _addresses(values)
