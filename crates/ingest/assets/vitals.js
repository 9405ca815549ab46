// Tally Web Vitals module (served as-is). Commented copy: vitals.src.js
(function(){'use strict';
var w=window,d=document,p=w.performance,PO=w.PerformanceObserver;
if(w.tallyVitals||!PO||!p)return;
var v={},ob=[],a=0,h=d.visibilityState=='hidden'?0:1/0,lo=1,c=0,sw=0,f,l,s,W=[],I={},mi=1/0,ma=0,n=0,co,N,k='interactionCount';
function O(t,g,o){try{var x=new PO(function(y){y.getEntries().forEach(g)});o=o||{};o.type=t;o.buffered=true;x.observe(o);ob.push([x,g]);return 1}catch(e){}}
function A(t){return Math.max(t-a,0)}
try{N=p.getEntriesByType('navigation')[0];if(N){a=N.activationStart||0;if(N.responseStart>0)v.ttfb=A(N.responseStart)}}catch(e){}
function H(e){if(d.visibilityState=='hidden')h=Math.min(h,e.timeStamp)}
d.addEventListener('visibilitychange',H,true);w.addEventListener('pagehide',H,true);
O('paint',function(e){if(e.name=='first-contentful-paint'&&e.startTime<h)v.fcp=A(e.startTime)});
O('largest-contentful-paint',function(e){if(lo&&e.startTime<h)v.lcp=A(e.startTime)});
function S(){if(lo){T();lo=0}}
['keydown','click'].forEach(function(t){d.addEventListener(t,S,true)});
co=O('layout-shift',function(e){if(!e.hadRecentInput){if(s&&e.startTime-l<1e3&&e.startTime-f<5e3)sw+=e.value;else{sw=e.value;f=e.startTime;s=1}l=e.startTime;if(sw>c)c=sw}});
function X(e){var i=e.interactionId,t,m;if(!i)return;t=I[i];m=W[W.length-1];
if(t)t.l=Math.max(t.l,e.duration);else if(W.length<10||e.duration>m.l){t=I[i]={id:i,l:e.duration};W.push(t)}else return;
W.sort(function(x,y){return y.l-x.l});while(W.length>10)delete I[W.pop().id]}
O('event',X,{durationThreshold:40});O('first-input',X);
if(!(k in p))O('event',function(e){var i=e.interactionId;if(i){mi=Math.min(mi,i);ma=Math.max(ma,i);n=(ma-mi)/7+1}},{durationThreshold:0});
function T(){for(var i=0;i<ob.length;i++)try{ob[i][0].takeRecords().forEach(ob[i][1])}catch(e){}}
w.tallyVitals=function(){var o={},q,m;try{T();for(q in v)o[q]=Math.round(v[q]);if(co&&'fcp' in v)o.cls=Math.round(c*1e4)/1e4;
if(W.length){m=k in p?p[k]:n;o.inp=Math.round(W[Math.min(W.length-1,Math.floor(m/50))].l)}}catch(e){}return o}})();
