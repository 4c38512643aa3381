"""Ad sets of the generated news pages (:mod:`er_framework.synth.news`): stop-word-poor marketing copy.

Each ad block names a made-up brand, a product, a deal or perk and a call to action; an ad set is
6-10 such blocks, the same on every page of a site that shows it (seeded by the set's number).
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

__all__ = ["Ad", "AdSet", "make_ads"]


_SYL = [
    "su",
    "dz",
    "o",
    "ka",
    "zo",
    "lu",
    "mi",
    "vo",
    "trix",
    "ex",
    "ra",
    "qui",
    "no",
    "vex",
    "zen",
    "ply",
    "bo",
    "flo",
    "gri",
    "ta",
    "pex",
    "ori",
    "ly",
    "max",
]
_PRODUCTS = [
    "Laundry Pods",
    "Running Shoes",
    "Noise-Cancelling Headphones",
    "Air Fryer",
    "Robot Vacuum",
    "Mattress",
    "Electric Toothbrush",
    "Protein Bars",
    "Dog Food",
    "Coffee Maker",
    "Smartwatch",
    "Sunscreen SPF 50",
    "Winter Jacket",
    "Gaming Chair",
    "Meal Kits",
    "Travel Insurance",
    "Car Lease",
    "Hair Dryer",
    "Yoga Mat",
    "Cordless Drill",
    "Face Serum",
    "Standing Desk",
    "Water Bottle",
    "Phone Plan",
    "Hearing Aids",
    "Solar Panels",
    "Home Security Camera",
    "Espresso Beans",
    "Leather Wallet",
    "Kids Scooter",
]
_ADJ = [
    "Ultra",
    "Pro",
    "Max",
    "Premium",
    "Organic",
    "Smart",
    "Eco",
    "Deluxe",
    "Plus",
    "Lite",
    "Turbo",
    "Pure",
    "Classic",
    "Elite",
    "Fresh",
    "Extra Strength",
    "Wireless",
    "Hybrid",
]
_DEALS = [
    "{p}% OFF",
    "Save {p}%",
    "Only ${d}.99",
    "From ${d}.99/mo",
    "${d}.99 — Was ${e}.99",
    "Buy 2 Get 1 Free",
    "{p}% Off Today",
    "Flash Sale",
    "Clearance",
    "Lowest Price Ever",
]
_PERKS = [
    "Free Shipping",
    "Free Returns",
    "Limited Time",
    "Best Seller",
    "New Arrivals",
    "Rated 4.8/5",
    "Ships Today",
    "Risk-Free Trial",
    "Award Winning",
    "Dermatologist Tested",
    "Free Gift Inside",
    "Exclusive Deal",
    "Money-Back Guarantee",
    "Clinically Proven",
    "Vegan",
    "Free Delivery",
    "Lifetime Warranty",
    "Eco-Friendly Packaging",
    "Over 10,000 5-Star Reviews",
    "Black Friday Prices",
]
_CTAS = [
    "Shop Now",
    "Shop Now",
    "Shop Now",
    "Order Today",
    "Claim Offer",
    "Buy Today",
    "Discover",
    "Get Yours",
    "Request Quote",
    "Start Trial",
    "Learn More",
    "Grab Deal",
]
_AD_LABELS = ["Advertisement", "Sponsored", "Ad", "Promoted", "Paid content"]


@dataclass(frozen=True)
class Ad:
    label: str
    brand: str
    headline: str  # "SUDZO Ultra Laundry Pods"
    copy: str  # "40% OFF — Free Shipping — Limited Time"
    cta: str

    @property
    def text(self) -> str:
        return f"{self.label} {self.headline} — {self.copy} — {self.cta}"


@dataclass(frozen=True)
class AdSet:
    ads: tuple[Ad, ...]


def _brand(rng: Random) -> str:
    return "".join(rng.choice(_SYL) for _ in range(rng.randint(2, 3))).upper()


def _ad(rng: Random) -> Ad:
    brand = _brand(rng)
    product = f"{rng.choice(_ADJ)} {rng.choice(_PRODUCTS)}"
    p, d = rng.choice([10, 15, 20, 25, 30, 40, 50, 60, 70]), rng.randint(9, 199)
    deal = rng.choice(_DEALS).format(p=p, d=d, e=d + rng.randint(10, 80))
    perks = rng.sample(_PERKS, rng.randint(1, 3))
    return Ad(
        label=rng.choice(_AD_LABELS),
        brand=brand,
        headline=f"{brand} {product}",
        copy=" — ".join([deal, *perks]),
        cta=rng.choice(_CTAS),
    )


def make_ads(seed: int, n: tuple[int, int] = (6, 10)) -> AdSet:
    """An ad set of ``n`` (min, max) ad blocks."""
    rng = Random(f"ads:{seed}")
    return AdSet(tuple(_ad(rng) for _ in range(rng.randint(*n))))
